//! `cairn serve` with the test job kinds registered.

use std::time::Duration;

use cairn_core::settings::Settings;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let settings = Settings::load()?.prepare()?;
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
