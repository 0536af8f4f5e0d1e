//! `cairn serve` with the test job kinds registered.

use std::time::Duration;

use cairn_core::settings::Settings;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let settings = Settings::load()?.prepare()?;
    // A test telling a notification from the five-second bound keeps
    // callers for longer.
    if let Some(secs) = std::env::var("CAIRN_TEST_CALLER_KEEP_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        cairn_platform::auth::kept::keep_at_most(Duration::from_secs(secs));
    }
    cairn::logging::init(&settings.log_format);
    let mut jobs = cairn_jobs::Registry::default();
    jobs.register(
        cairn_tests::batches::KIND,
        cairn_tests::batches::Batches,
        Duration::from_secs(60),
    );
    let server = cairn::server::start_with_jobs(settings, jobs).await?;
    println!("listening on {}", server.addr);
    server.run_until_signal().await
}
