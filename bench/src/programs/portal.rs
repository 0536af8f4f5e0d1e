//! Upload and download of one large document through the client portal API
//! with the local store: MB/s each way and the peak memory of the process
//! (the service, plus a client that streams both ways and holds nothing).
//! Usage: cairn-bench portal [megabytes] (default 1024)

use std::time::Instant;

use futures::StreamExt;
use serde_json::{json, Value};

const CHUNK: usize = 1024 * 1024;

pub async fn main() -> anyhow::Result<()> {
    let megabytes: usize = crate::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(1024);
    let (db, url) = cairn_bench::fresh_database("sqlite").await?;
    db.close().await;
    let data_dir =
        std::env::temp_dir().join(format!("cairn-cairn-bench portal-{}", std::process::id()));
    let settings = cairn_core::settings::Settings {
        listen: "127.0.0.1:0".into(),
        database_url: url.clone(),
        data_dir: data_dir.clone(),
        connectors_dir: data_dir.join("components"),
        rate_limit_per_minute: 0,
        job_workers: 0,
        portal_max_upload_mb: megabytes as u64 + 1,
        ..Default::default()
    }
    .prepare()?;
    let server = cairn::server::start(settings).await?;
    let base = server.base_url();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let admin: Value = http
        .post(format!("{base}/api/v1/auth/register"))
        .json(&json!({"email": "admin@bench.example", "password": "bench-password-1"}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let token = admin["access_token"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let client: Value = http
        .post(format!("{base}/api/v1/portal/clients"))
        .bearer_auth(&token)
        .json(&json!({"name": "Bench Co"}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let client_id = client["id"].as_str().unwrap_or_default();
    let key: Value = http
        .post(format!("{base}/api/v1/portal/clients/{client_id}/keys"))
        .bearer_auth(&token)
        .json(&json!({}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let key = key["key"].as_str().unwrap_or_default().to_string();

    // A CSV generated on the fly, one chunk at a time.
    let line = b"device,application,vendor,version\n";
    let chunk: Vec<u8> = line.iter().copied().cycle().take(CHUNK).collect();
    let bytes = (megabytes * CHUNK) as u64;
    let body =
        futures::stream::iter((0..megabytes).map(move |_| Ok::<_, std::io::Error>(chunk.clone())));
    let part =
        reqwest::multipart::Part::stream_with_length(reqwest::Body::wrap_stream(body), bytes)
            .file_name("inventory-export.csv");
    let started = Instant::now();
    let uploaded: Value = http
        .post(format!("{base}/api/files"))
        .bearer_auth(&key)
        .multipart(reqwest::multipart::Form::new().part("file", part))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let up_secs = started.elapsed().as_secs_f64();
    let id = uploaded["id"].as_str().unwrap_or_default();
    anyhow::ensure!(
        uploaded["sizeBytes"].as_u64() == Some(bytes),
        "stored {uploaded}"
    );

    let started = Instant::now();
    let redirect = http
        .get(format!("{base}/api/files/{id}/download"))
        .bearer_auth(&key)
        .send()
        .await?;
    let location = redirect
        .headers()
        .get("location")
        .and_then(|l| l.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let mut stream = http
        .get(format!("{base}{location}"))
        .send()
        .await?
        .error_for_status()?
        .bytes_stream();
    let mut received = 0u64;
    while let Some(chunk) = stream.next().await {
        received += chunk?.len() as u64;
    }
    let down_secs = started.elapsed().as_secs_f64();
    anyhow::ensure!(received == bytes, "downloaded {received} of {bytes} bytes");

    let mb = bytes as f64 / (1024.0 * 1024.0);
    println!(
        "cairn portal document benchmark: {megabytes} MB through /api/files (local store, SQLite)"
    );
    println!("  upload   {up_secs:.1} s, {:.0} MB/s", mb / up_secs);
    println!("  download {down_secs:.1} s, {:.0} MB/s", mb / down_secs);
    println!(
        "  peak memory of the process (service and streaming client): {:.0} MiB",
        cairn_bench::peak_rss_mib()
    );
    server.stop().await?;
    cairn_bench::drop_database(db, &url).await;
    let _ = std::fs::remove_dir_all(data_dir);
    Ok(())
}
