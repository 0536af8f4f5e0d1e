//! The `cairn` binary.

use clap::{Parser, Subcommand};

use cairn::settings::Settings;

#[derive(Parser)]
#[command(
    name = "cairn",
    version,
    about = "Vulnerability and asset management service"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP service (the default).
    Serve,
    /// Apply database migrations and exit.
    Migrate,
    /// Print the OpenAPI document.
    Openapi,
    /// Work with the plugins in the connectors directory.
    Connectors {
        #[command(subcommand)]
        command: ConnectorsCommand,
    },
}

#[derive(Subcommand)]
enum ConnectorsCommand {
    /// List the connectors and CSV providers that load, and the files skipped.
    List,
}

fn init_logging(settings: &Settings) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("CAIRN_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
    // Logs go to stderr so that commands printing documents (openapi) keep
    // stdout clean.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if settings.log_format == "json" {
        builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .init();
    } else {
        builder.init();
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let settings = Settings::load()?.prepare()?;
    init_logging(&settings);
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => {
            let server = cairn::server::start(settings).await?;
            println!("cairn listening on http://{} (docs at /docs)", server.addr);
            server.run_until_signal().await
        }
        Command::Migrate => {
            let db = cairn::db::Db::connect(&settings.database_url, 1).await?;
            db.migrate().await?;
            println!("migrations applied ({})", db.backend.name());
            Ok(())
        }
        Command::Connectors {
            command: ConnectorsCommand::List,
        } => {
            let plugins = cairn::plugins::Plugins::load(&settings).await?;
            println!(
                "connectors directory: {}",
                settings.connectors_dir.display()
            );
            for c in &plugins.connectors {
                let d = &c.descriptor;
                println!(
                    "connector    {:<16} {} {} (sdk {})  {}",
                    d.id,
                    d.name,
                    d.version,
                    d.sdk_version,
                    c.file.display()
                );
            }
            for p in &plugins.csv_providers {
                let d = &p.descriptor;
                println!(
                    "csv-provider {:<16} {} (sdk {})  {}",
                    d.key,
                    d.name,
                    d.sdk_version,
                    p.file.display()
                );
            }
            for s in &plugins.skipped {
                println!("skipped      {}: {}", s.file, s.reason);
            }
            Ok(())
        }
        Command::Openapi => {
            let state =
                cairn::app::AppState::new(settings, cairn::jobs::Registry::default()).await?;
            let (_, doc) = cairn::http::router(&state);
            println!("{}", doc.to_pretty_json()?);
            Ok(())
        }
    }
}
