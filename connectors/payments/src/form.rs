//! `application/x-www-form-urlencoded` bodies, the way Stripe's API takes
//! them: nested fields as `a[b][0][c]=value`.

/// Appends `text` percent-encoded (WHATWG urlencoded serializer: ASCII
/// alphanumerics and `*-._` stay, a space becomes `+`, every other byte of
/// the UTF-8 text becomes `%XX`). `keep_brackets` leaves `[` and `]` as they
/// are, for readable nested keys; servers decode both spellings the same.
fn encode_into(out: &mut String, text: &str, keep_brackets: bool) {
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => {
                out.push(byte as char)
            }
            b'[' | b']' if keep_brackets => out.push(byte as char),
            b' ' => out.push('+'),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
}

/// `key=value&key=value...`, keys and values percent-encoded, in the given
/// order.
pub fn encode<K: AsRef<str>, V: AsRef<str>>(pairs: &[(K, V)]) -> String {
    let mut out = String::new();
    for (i, (key, value)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        encode_into(&mut out, key.as_ref(), true);
        out.push('=');
        encode_into(&mut out, value.as_ref(), false);
    }
    out
}

/// Percent-encodes one value (e.g. for a query string).
pub fn encode_value(value: &str) -> String {
    let mut out = String::new();
    encode_into(&mut out, value, false);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_pairs_are_joined_in_order() {
        assert_eq!(
            encode(&[("mode", "payment"), ("line_items[0][quantity]", "1")]),
            "mode=payment&line_items[0][quantity]=1"
        );
    }

    #[test]
    fn reserved_and_non_ascii_bytes_are_escaped() {
        assert_eq!(
            encode(&[("name", "Invoice 7: a&b=c+d/e?f#g%h[i]~")]),
            "name=Invoice+7%3A+a%26b%3Dc%2Bd%2Fe%3Ff%23g%25h%5Bi%5D%7E"
        );
        assert_eq!(encode_value("Café ✓"), "Caf%C3%A9+%E2%9C%93");
        assert_eq!(encode_value("a*b-c.d_e"), "a*b-c.d_e");
        assert_eq!(encode_value("line\r\nbreak"), "line%0D%0Abreak");
    }

    #[test]
    fn urls_survive_as_values() {
        assert_eq!(
            encode(&[(
                "success_url",
                "https://app.example.com/pay/done?invoice={ID}&ok=1"
            )]),
            "success_url=https%3A%2F%2Fapp.example.com%2Fpay%2Fdone%3Finvoice%3D%7BID%7D%26ok%3D1"
        );
    }

    #[test]
    fn empty_input_is_empty() {
        assert_eq!(encode::<&str, &str>(&[]), "");
    }
}
