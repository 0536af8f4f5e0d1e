//! Qualys XML as JSON: an element with children becomes an object of its
//! children by name (a name that repeats becomes a list), an element with
//! only text (CDATA included) becomes that text. Truncated or malformed XML
//! is an error, never a partial page.

use cairn_sdk::Value;
use quick_xml::events::Event;
use quick_xml::Reader;

struct Element {
    name: String,
    text: String,
    children: serde_json::Map<String, Value>,
}

impl Element {
    fn new(name: String) -> Element {
        Element {
            name,
            text: String::new(),
            children: serde_json::Map::new(),
        }
    }

    fn into_value(self) -> Value {
        if self.children.is_empty() {
            Value::String(self.text.trim().to_string())
        } else {
            Value::Object(self.children)
        }
    }

    fn add(&mut self, name: String, value: Value) {
        match self.children.get_mut(&name) {
            Some(Value::Array(items)) => items.push(value),
            Some(existing) => {
                let first = existing.take();
                *existing = Value::Array(vec![first, value]);
            }
            None => {
                self.children.insert(name, value);
            }
        }
    }
}

/// The document's root element as JSON, with its name.
pub fn parse(text: &str) -> Result<(String, Value), String> {
    let mut reader = Reader::from_str(text);
    let mut stack: Vec<Element> = Vec::new();
    loop {
        let event = reader.read_event().map_err(|e| format!("bad XML: {e}"))?;
        match event {
            Event::Start(start) => {
                let name = String::from_utf8_lossy(start.local_name().as_ref()).into_owned();
                stack.push(Element::new(name));
            }
            Event::Empty(empty) => {
                let name = String::from_utf8_lossy(empty.local_name().as_ref()).into_owned();
                if let Some(parent) = stack.last_mut() {
                    parent.add(name, Value::String(String::new()));
                }
            }
            Event::Text(text) => {
                if let Some(current) = stack.last_mut() {
                    current
                        .text
                        .push_str(&text.decode().map_err(|e| format!("bad XML text: {e}"))?);
                }
            }
            Event::CData(data) => {
                if let Some(current) = stack.last_mut() {
                    current
                        .text
                        .push_str(&String::from_utf8_lossy(&data.into_inner()));
                }
            }
            Event::GeneralRef(entity) => {
                if let Some(current) = stack.last_mut() {
                    if let Ok(Some(c)) = entity.resolve_char_ref() {
                        current.text.push(c);
                    } else if let Some(text) = entity
                        .decode()
                        .ok()
                        .and_then(|name| quick_xml::escape::resolve_predefined_entity(&name))
                    {
                        current.text.push_str(text);
                    }
                }
            }
            Event::End(_) => {
                let done = stack.pop().ok_or("an end tag without a start")?;
                match stack.last_mut() {
                    Some(parent) => {
                        let name = done.name.clone();
                        parent.add(name, done.into_value());
                    }
                    None => return Ok((done.name.clone(), done.into_value())),
                }
            }
            Event::Eof => {
                return Err(match stack.last() {
                    Some(open) => format!("the XML ends inside <{}> (truncated)", open.name),
                    None => "an empty XML document".to_string(),
                })
            }
            _ => {}
        }
    }
}

/// The elements of a list that may hold one (an object) or several (an
/// array).
pub fn items(value: &Value) -> Vec<&Value> {
    match value {
        Value::Array(items) => items.iter().collect(),
        Value::Object(_) => vec![value],
        _ => vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_lists_cdata_and_truncation() {
        let (root, value) = parse(
            "<?xml version=\"1.0\"?><R><A>1</A><L><I>x &amp; y</I><I><![CDATA[<b>]]></I></L><E/></R>",
        )
        .unwrap();
        assert_eq!(root, "R");
        assert_eq!(value["A"], "1");
        assert_eq!(value["L"]["I"], serde_json::json!(["x & y", "<b>"]));
        assert_eq!(items(&value["L"]["I"]).len(), 2);
        assert_eq!(items(&value["A"]).len(), 0);
        assert!(parse("<R><A>1</A><L><I>x")
            .unwrap_err()
            .contains("truncated"));
    }
}
