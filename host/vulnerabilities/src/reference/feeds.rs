//! The small reference feeds: CISA KEV (JSON), FIRST EPSS (CSV) and the
//! MITRE CWE catalog (XML). Parsing only.

use std::io::BufRead;

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KevEntry {
    #[serde(rename = "cveID")]
    pub cve_id: String,
    #[serde(default)]
    pub vendor_project: String,
    #[serde(default)]
    pub product: String,
    #[serde(default)]
    pub vulnerability_name: String,
    pub date_added: String,
    #[serde(default)]
    pub due_date: Option<String>,
    #[serde(default)]
    pub known_ransomware_campaign_use: String,
    #[serde(default)]
    pub required_action: String,
}

#[derive(Deserialize)]
struct KevCatalog {
    vulnerabilities: Vec<KevEntry>,
}

/// The KEV catalog (`known_exploited_vulnerabilities.json`).
pub fn parse_kev(bytes: &[u8]) -> Result<Vec<KevEntry>, serde_json::Error> {
    Ok(serde_json::from_slice::<KevCatalog>(bytes)?.vulnerabilities)
}

#[derive(Debug, Clone, PartialEq)]
pub struct EpssScore {
    pub cve_id: String,
    pub score: f64,
    pub percentile: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum FeedError {
    #[error("EPSS line {line}: {reason}")]
    Epss { line: usize, reason: String },
    #[error("CWE XML: {0}")]
    Cwe(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The EPSS CSV: an optional `#model_version:...,score_date:...` comment,
/// the `cve,epss,percentile` header, then one row per CVE. Returns the
/// score date (from the comment, else `today`) and the scores.
pub fn parse_epss(
    reader: impl BufRead,
    today: &str,
) -> Result<(String, Vec<EpssScore>), FeedError> {
    let mut date = today.to_string();
    let mut scores = Vec::new();
    for (index, line) in reader.lines().enumerate() {
        let line = line?;
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            if let Some(at) = comment
                .split(',')
                .find_map(|part| part.trim().strip_prefix("score_date:"))
            {
                date = at.get(..10).unwrap_or(at).to_string();
            }
            continue;
        }
        if line.starts_with("cve,") {
            continue;
        }
        let mut cells = line.split(',');
        let bad = |reason: &str| FeedError::Epss {
            line: index + 1,
            reason: reason.into(),
        };
        let cve_id = cells.next().filter(|c| c.starts_with("CVE-"));
        let score = cells.next().and_then(|c| c.trim().parse::<f64>().ok());
        let percentile = cells.next().and_then(|c| c.trim().parse::<f64>().ok());
        match (cve_id, score, percentile) {
            (Some(cve_id), Some(score), Some(percentile))
                if (0.0..=1.0).contains(&score) && (0.0..=1.0).contains(&percentile) =>
            {
                scores.push(EpssScore {
                    cve_id: cve_id.to_string(),
                    score,
                    percentile,
                })
            }
            _ => return Err(bad("expected CVE id, score and percentile between 0 and 1")),
        }
    }
    Ok((date, scores))
}

#[derive(Debug, Clone, PartialEq)]
pub struct Cwe {
    /// `CWE-79`.
    pub id: String,
    pub name: String,
    pub description: String,
}

/// The weaknesses of a MITRE CWE catalog (`cwec_v4.x.xml`).
pub fn parse_cwe(reader: impl BufRead) -> Result<Vec<Cwe>, FeedError> {
    use quick_xml::events::Event;
    let mut xml = quick_xml::Reader::from_reader(reader);
    let mut buf = Vec::new();
    let mut out = Vec::new();
    let mut current: Option<Cwe> = None;
    let mut in_description = false;
    let mut depth_in_weakness = 0usize;
    loop {
        match xml
            .read_event_into(&mut buf)
            .map_err(|e| FeedError::Cwe(e.to_string()))?
        {
            Event::Start(e) if e.local_name().as_ref() == b"Weakness" => {
                let mut cwe = Cwe {
                    id: String::new(),
                    name: String::new(),
                    description: String::new(),
                };
                for attr in e.attributes().flatten() {
                    let value = attr
                        .unescape_value()
                        .map_err(|e| FeedError::Cwe(e.to_string()))?
                        .to_string();
                    match attr.key.local_name().as_ref() {
                        b"ID" => cwe.id = format!("CWE-{value}"),
                        b"Name" => cwe.name = value,
                        _ => {}
                    }
                }
                current = Some(cwe);
                depth_in_weakness = 0;
            }
            Event::Start(e) if current.is_some() => {
                depth_in_weakness += 1;
                in_description =
                    depth_in_weakness == 1 && e.local_name().as_ref() == b"Description";
            }
            Event::Text(text) if in_description => {
                if let Some(cwe) = current.as_mut() {
                    let text = text.decode().map_err(|e| FeedError::Cwe(e.to_string()))?;
                    cwe.description.push_str(&text);
                }
            }
            // Since quick-xml 0.38 entities arrive as events of their own.
            Event::GeneralRef(entity) if in_description => {
                if let Some(cwe) = current.as_mut() {
                    if let Ok(Some(c)) = entity.resolve_char_ref() {
                        cwe.description.push(c);
                    } else if let Some(text) = entity
                        .decode()
                        .ok()
                        .and_then(|name| quick_xml::escape::resolve_predefined_entity(&name))
                    {
                        cwe.description.push_str(text);
                    }
                }
            }
            Event::End(e) if e.local_name().as_ref() == b"Weakness" => {
                if let Some(mut cwe) = current.take().filter(|c| c.id.len() > 4) {
                    cwe.description = cwe.description.trim().to_string();
                    out.push(cwe);
                }
            }
            Event::End(_) if current.is_some() => {
                depth_in_weakness = depth_in_weakness.saturating_sub(1);
                in_description = false;
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    if out.is_empty() {
        return Err(FeedError::Cwe("no Weakness elements".into()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(path: &str) -> Vec<u8> {
        std::fs::read(format!(
            "{}/../../tests/fixtures/{path}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    #[test]
    fn kev_fixture() {
        let entries =
            parse_kev(&fixture("kev/known_exploited_vulnerabilities_first50.json")).unwrap();
        assert_eq!(entries.len(), 50);
        assert_eq!(entries[0].cve_id, "CVE-2025-48384");
        assert!(!entries[0].date_added.is_empty());
    }

    #[test]
    fn epss_fixture() {
        let bytes = fixture("epss/epss_scores-current_first200.csv");
        let (date, scores) = parse_epss(&bytes[..], "2000-01-01").unwrap();
        assert_eq!(date, "2026-09-29");
        assert_eq!(scores.len(), 198);
        assert_eq!(scores[0].cve_id, "CVE-1999-0001");
        assert!((scores[0].score - 0.03351).abs() < 1e-9);
        assert!(parse_epss(&b"cve,epss,percentile\nCVE-1,2.0,0.1\n"[..], "x").is_err());
    }

    #[test]
    fn cwe_xml() {
        let xml = br#"<?xml version="1.0" encoding="UTF-8"?>
<Weakness_Catalog Name="CWE" Version="4.15" xmlns="http://cwe.mitre.org/cwe-7">
 <Weaknesses>
  <Weakness ID="79" Name="Improper Neutralization of Input During Web Page Generation ('Cross-site Scripting')" Abstraction="Base">
   <Description>The product does not neutralize &lt;input&gt;.</Description>
   <Extended_Description><xhtml:p>More.</xhtml:p></Extended_Description>
  </Weakness>
  <Weakness ID="502" Name="Deserialization of Untrusted Data"><Description>Untrusted data.</Description></Weakness>
 </Weaknesses>
 <Categories><Category ID="1" Name="Not a weakness"/></Categories>
</Weakness_Catalog>"#;
        let cwes = parse_cwe(&xml[..]).unwrap();
        assert_eq!(cwes.len(), 2);
        assert_eq!(cwes[0].id, "CWE-79");
        assert_eq!(
            cwes[0].description,
            "The product does not neutralize <input>."
        );
        assert_eq!(cwes[1].name, "Deserialization of Untrusted Data");
    }
}
