//! A fake SMTP server on 127.0.0.1 that keeps every message it receives.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

#[derive(Debug, Clone)]
pub struct Mail {
    pub from: String,
    pub to: Vec<String>,
    pub data: String,
}

#[derive(Clone, Default)]
pub struct FakeSmtp {
    pub port: u16,
    mails: Arc<Mutex<Vec<Mail>>>,
}

impl FakeSmtp {
    pub async fn start() -> FakeSmtp {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind fake SMTP");
        let port = listener.local_addr().unwrap().port();
        let mails: Arc<Mutex<Vec<Mail>>> = Arc::default();
        let store = mails.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let store = store.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, store).await;
                });
            }
        });
        FakeSmtp { port, mails }
    }

    pub fn mails(&self) -> Vec<Mail> {
        self.mails.lock().unwrap().clone()
    }
}

async fn serve(stream: tokio::net::TcpStream, store: Arc<Mutex<Vec<Mail>>>) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read);
    write.write_all(b"220 fake.smtp ESMTP ready\r\n").await?;
    let mut current = Mail {
        from: String::new(),
        to: vec![],
        data: String::new(),
    };
    let mut line = String::new();
    loop {
        line.clear();
        if lines.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let command = line.trim_end().to_string();
        let upper = command.to_ascii_uppercase();
        if upper.starts_with("EHLO") || upper.starts_with("HELO") {
            write
                .write_all(b"250-fake.smtp\r\n250 8BITMIME\r\n")
                .await?;
        } else if upper.starts_with("MAIL FROM:") {
            current.from = command[10..].trim().to_string();
            write.write_all(b"250 OK\r\n").await?;
        } else if upper.starts_with("RCPT TO:") {
            current.to.push(command[8..].trim().to_string());
            write.write_all(b"250 OK\r\n").await?;
        } else if upper == "DATA" {
            write.write_all(b"354 end with <CRLF>.<CRLF>\r\n").await?;
            let mut data = String::new();
            loop {
                line.clear();
                if lines.read_line(&mut line).await? == 0 {
                    return Ok(());
                }
                if line == ".\r\n" || line == ".\n" {
                    break;
                }
                data.push_str(&line);
            }
            current.data = decode_quoted_printable(&data);
            store.lock().unwrap().push(current.clone());
            current = Mail {
                from: String::new(),
                to: vec![],
                data: String::new(),
            };
            write.write_all(b"250 OK queued\r\n").await?;
        } else if upper == "QUIT" {
            write.write_all(b"221 bye\r\n").await?;
            return Ok(());
        } else {
            write.write_all(b"250 OK\r\n").await?;
        }
    }
}

/// Undoes quoted-printable soft line breaks and `=XX` escapes, which mail
/// libraries use for long lines such as links.
fn decode_quoted_printable(data: &str) -> String {
    let joined = data.replace("=\r\n", "").replace("=\n", "");
    let bytes = joined.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'=' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
            if let Ok(byte) = u8::from_str_radix(hex, 16) {
                out.push(byte);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
