//! The `cairn` binary.

use clap::{Parser, Subcommand};

use cairn_core::settings::Settings;

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
    /// Print the OpenAPI document (`--portal`: the client portal API's).
    Openapi {
        #[arg(long)]
        portal: bool,
    },
    /// Run the client portal: customers (portal clients) and their API keys.
    Portal {
        #[command(subcommand)]
        command: PortalCommand,
    },
    /// The CVE knowledge base: offline imports and on-demand source loads.
    Vuln {
        #[command(subcommand)]
        command: VulnCommand,
    },
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

#[derive(Subcommand)]
enum VulnCommand {
    /// Import files: NVD JSON 2.0 (feeds or API pages), CVE JSON 5 records
    /// (single files or a zip of the CVE List), the KEV JSON, the EPSS CSV,
    /// the CWE XML, an NVD CPE dictionary; plain, .gz or .zip; directories
    /// are read file by file. Idempotent: the newest lastModified wins.
    Import {
        #[arg(required = true)]
        paths: Vec<std::path::PathBuf>,
    },
    /// Load one source now from its configured URL: nvd, kev or epss.
    Sync { source: String },
}

async fn vuln(settings: &Settings, command: VulnCommand) -> anyhow::Result<()> {
    use cairn_vulnerabilities::{import, sources};
    let db = cairn_core::db::Db::connect(&settings.database_url, 2).await?;
    db.migrate().await?;
    match command {
        VulnCommand::Import { paths } => {
            let started = std::time::Instant::now();
            let reports = import::import_paths(&db, &paths).await?;
            for r in &reports {
                println!(
                    "{}\t{}\tread {}\twritten {}\tunchanged {}\tskipped {}",
                    r.file, r.kind, r.records, r.written, r.unchanged, r.skipped
                );
                for error in &r.errors {
                    println!("  skipped: {error}");
                }
            }
            eprintln!("imported in {:.1} s", started.elapsed().as_secs_f64());
            if reports
                .iter()
                .any(|r| r.written > 0 && matches!(r.kind, "nvd" | "cve5" | "osv"))
            {
                cairn_vulnerabilities::request_rescans(&db).await?;
            }
        }
        VulnCommand::Sync { source } => {
            let config = sources::SourceConfig::from_settings(settings);
            let run = match source.as_str() {
                sources::NVD => sources::sync_nvd(&db, &config, &sources::PrintProgress).await?,
                sources::KEV => sources::sync_kev(&db, &config).await?,
                sources::EPSS => sources::sync_epss(&db, &config).await?,
                other => anyhow::bail!("unknown source {other}; use nvd, kev or epss"),
            };
            println!(
                "{source}: {} requests, {} records, {} written",
                run.requests, run.records, run.written
            );
            if source == sources::NVD && run.written > 0 {
                cairn_vulnerabilities::request_rescans(&db).await?;
            }
        }
    }
    Ok(())
}

#[derive(Subcommand)]
enum PortalCommand {
    /// Add a portal client (a customer company) to a tenant.
    AddClient {
        #[arg(long)]
        tenant: String,
        name: String,
    },
    /// List a tenant's portal clients.
    Clients {
        #[arg(long)]
        tenant: String,
    },
    /// Mint an API key for a client (given by id or name); prints it once.
    MintKey {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        client: String,
        #[arg(long)]
        label: Option<String>,
    },
    /// List a client's keys (prefixes only).
    Keys {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        client: String,
    },
    /// Revoke a key by id.
    RevokeKey {
        #[arg(long)]
        tenant: String,
        key_id: String,
    },
}

async fn portal(settings: &Settings, command: PortalCommand) -> anyhow::Result<()> {
    use cairn_core::ids::TenantId;
    use cairn_features::portal::clients;
    let db = cairn_core::db::Db::connect(&settings.database_url, 2).await?;
    db.migrate().await?;
    let client_id = async |tenant: &TenantId, client: &str| -> anyhow::Result<String> {
        if clients::exists(&db, tenant, client).await? {
            return Ok(client.to_string());
        }
        clients::id_by_name(&db, tenant, client)
            .await?
            .ok_or_else(|| {
                anyhow::anyhow!("no portal client {client} in tenant {}", tenant.as_str())
            })
    };
    match command {
        PortalCommand::AddClient { tenant, name } => {
            let client = clients::create(&db, &TenantId(tenant), &name).await?;
            println!("{}\t{}", client.id, client.name);
        }
        PortalCommand::Clients { tenant } => {
            for client in clients::list(&db, &TenantId(tenant)).await? {
                println!("{}\t{}\t{}", client.id, client.name, client.created_at);
            }
        }
        PortalCommand::MintKey {
            tenant,
            client,
            label,
        } => {
            let tenant = TenantId(tenant);
            let id = client_id(&tenant, &client).await?;
            let minted = clients::mint_key(&db, &tenant, &id, label.as_deref()).await?;
            println!("{}", minted.key);
            eprintln!("key id {} (shown once; store it now)", minted.view.id);
        }
        PortalCommand::Keys { tenant, client } => {
            let tenant = TenantId(tenant);
            let id = client_id(&tenant, &client).await?;
            for key in clients::list_keys(&db, &tenant, &id).await? {
                println!(
                    "{}\t{}...\t{}\tlast used {}\t{}",
                    key.id,
                    key.prefix,
                    key.label.unwrap_or_default(),
                    key.last_used_at.unwrap_or_else(|| "never".into()),
                    key.revoked_at
                        .map(|at| format!("revoked {at}"))
                        .unwrap_or_default()
                );
            }
        }
        PortalCommand::RevokeKey { tenant, key_id } => {
            if !clients::revoke_key(&db, &TenantId(tenant), &key_id).await? {
                anyhow::bail!("no key {key_id} in that tenant");
            }
            println!("revoked {key_id}");
        }
    }
    Ok(())
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
async fn main() -> std::process::ExitCode {
    // One line an operator can act on, not a debug dump.
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("cairn: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> anyhow::Result<()> {
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
            let db = cairn_core::db::Db::connect(&settings.database_url, 1).await?;
            db.migrate().await?;
            println!("migrations applied ({})", db.backend.name());
            Ok(())
        }
        Command::Connectors {
            command: ConnectorsCommand::List,
        } => {
            let plugins = cairn_plugins::Plugins::load(&settings).await?;
            println!(
                "connectors directory: {}",
                settings.connectors_dir.display()
            );
            for c in &plugins.connectors {
                let d = &c.descriptor;
                println!(
                    "connector    {:<16} area {:<12} {} {} (sdk {})  {}",
                    d.id,
                    d.area,
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
        Command::Openapi { portal } => {
            let state = cairn_platform::app::AppState::new(
                settings,
                cairn_jobs::Registry::default(),
                cairn::server::register_area_jobs,
            )
            .await?;
            let documents = cairn::http::router(&state).1;
            let doc = if portal {
                documents.portal
            } else {
                documents.api
            };
            println!("{}", serde_json::to_string_pretty(&doc)?);
            Ok(())
        }
        Command::Portal { command } => portal(&settings, command).await,
        Command::Vuln { command } => vuln(&settings, command).await,
    }
}
