//! The `cairn` binary.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::{Parser, Subcommand, ValueEnum};

use cairn_core::ids::TenantId;
use cairn_core::settings::Settings;

mod progress;

#[derive(Parser)]
#[command(
    name = "cairn",
    version,
    about = "Vulnerability and asset management service for managed service providers",
    long_about = "Vulnerability and asset management service for managed service providers.\n\n\
        Settings come from cairn.toml (or the file CAIRN_CONFIG names) and CAIRN_* \
        variables. By default the data lives in $XDG_DATA_HOME/cairn/data and the \
        connector modules in $XDG_DATA_HOME/cairn/components (~/.local/share/cairn/... \
        without XDG_DATA_HOME), where `cargo xtask install` puts them; CAIRN_DATA_DIR \
        and CAIRN_CONNECTORS_DIR point elsewhere."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP service (the default). Creates the data directory and
    /// the database on the first run; refuses to start without connector
    /// modules.
    Serve,
    /// Apply database migrations and exit.
    Migrate,
    /// Print the OpenAPI document, connector routes included.
    Openapi {
        /// Print the client portal API's document instead of /api/v1's.
        #[arg(long)]
        portal: bool,
    },
    /// Manage the client portal: customers (portal clients) and their API keys.
    Portal {
        #[command(subcommand)]
        command: PortalCommand,
    },
    /// The CVE knowledge base: where its feeds come from, how to load them.
    #[command(long_about = VULN_ABOUT)]
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

const VULN_ABOUT: &str = "The CVE knowledge base that findings are matched against.\n\n\
    Where each feed is published:\n  \
    nvd   NVD CVE API 2.0, https://services.nvd.nist.gov/rest/json/cves/2.0\n        \
    (CVE descriptions, CVSS, affected products; an API key from\n        \
    https://nvd.nist.gov/developers/request-an-api-key makes it ten times faster)\n  \
    kev   CISA Known Exploited Vulnerabilities,\n        \
    https://www.cisa.gov/sites/default/files/feeds/known_exploited_vulnerabilities.json\n  \
    epss  FIRST EPSS scores, https://epss.cyentia.com/epss_scores-current.csv.gz\n\n\
    Online, the service loads them on its own (vuln_schedule) and `cairn vuln bootstrap` \
    loads all three now. Offline, download those files on a machine that has internet \
    (for NVD, the yearly JSON 2.0 feeds or the CVE List zip from \
    https://github.com/CVEProject/cvelistV5/releases), carry them over and run \
    `cairn vuln import <files or directories>`. `GET /api/v1/vulnerabilities/sources` \
    says what each source holds and when it last loaded.";

#[derive(Subcommand)]
enum ConnectorsCommand {
    /// List the connectors and CSV providers that load, and the files skipped.
    List,
}

#[derive(Clone, Copy, ValueEnum)]
enum Source {
    /// The NVD CVE API 2.0 (descriptions, scores, affected products).
    Nvd,
    /// CISA's Known Exploited Vulnerabilities catalog.
    Kev,
    /// FIRST's EPSS scores.
    Epss,
}

#[derive(Subcommand)]
enum VulnCommand {
    /// Import downloaded files: NVD JSON 2.0 (feeds or API pages), CVE JSON 5
    /// records (single files or a zip of the CVE List), the KEV JSON, the
    /// EPSS CSV, the CWE XML, an NVD CPE dictionary; plain, .gz or .zip;
    /// directories are read file by file. Idempotent: the newest
    /// lastModified wins.
    Import {
        /// Files or directories to import.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Load one source now from its configured URL.
    Sync {
        /// Which source to load.
        #[arg(value_enum)]
        source: Source,
    },
    /// Load KEV, EPSS and then the whole NVD now (needs internet; NVD takes
    /// about 20 minutes without an API key), with progress.
    Bootstrap,
}

#[derive(Subcommand)]
enum PortalCommand {
    /// Add a portal client (a customer company) to a tenant.
    AddClient {
        /// The tenant's id (see GET /api/v1/tenant).
        #[arg(long)]
        tenant: String,
        /// The customer company's name.
        name: String,
    },
    /// List a tenant's portal clients.
    Clients {
        /// The tenant's id.
        #[arg(long)]
        tenant: String,
    },
    /// Mint an API key for a client; prints it once.
    MintKey {
        /// The tenant's id.
        #[arg(long)]
        tenant: String,
        /// The client, by id or by name.
        #[arg(long)]
        client: String,
        /// A label to tell keys apart (where the key is used).
        #[arg(long)]
        label: Option<String>,
    },
    /// List a client's keys (prefixes only).
    Keys {
        /// The tenant's id.
        #[arg(long)]
        tenant: String,
        /// The client, by id or by name.
        #[arg(long)]
        client: String,
    },
    /// Revoke a key.
    RevokeKey {
        /// The tenant's id.
        #[arg(long)]
        tenant: String,
        /// The key's id (see `cairn portal keys`).
        key_id: String,
    },
}

fn main() -> std::process::ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("cairn: cannot start the async runtime: {err}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run());
    // A blocking thread still reading a file (a spreadsheet being parsed)
    // must not keep the process alive; its job was handed back already.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    // One line an operator can act on, not a debug dump.
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("cairn: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let settings = Settings::load()?;
    let command = cli.command.unwrap_or(Command::Serve);
    if let Command::Portal { .. } = command {
        require_database(&settings)?;
    }
    // Serve, migrate and vuln make the data directory and the database
    // when missing; the log says so once it is set up.
    let new_database = settings.sqlite_file().filter(|file| !file.exists());
    if matches!(
        command,
        Command::Serve | Command::Openapi { .. } | Command::Connectors { .. }
    ) {
        require_components(&settings.connectors_dir)?;
    }
    match command {
        Command::Serve => {
            let settings = settings.prepare()?;
            cairn::logging::init(&settings.log_format);
            announce_first_run(new_database.as_deref());
            let server = cairn::server::start(settings).await?;
            // In JSON mode every line is JSON; the log line says the same.
            if server.state.settings.log_format != "json" {
                println!("cairn listening on http://{} (docs at /docs)", server.addr);
            }
            server.run_until_signal().await
        }
        Command::Migrate => {
            let settings = settings.prepare()?;
            cairn::logging::init(&settings.log_format);
            announce_first_run(new_database.as_deref());
            let db = cairn_core::db::Db::connect(&settings.database_url, 1).await?;
            db.migrate().await?;
            println!("migrations applied ({})", db.backend.name());
            Ok(())
        }
        Command::Connectors {
            command: ConnectorsCommand::List,
        } => {
            cairn::logging::init(&settings.log_format);
            connectors_list(&settings).await
        }
        Command::Openapi { portal } => openapi(settings, portal).await,
        Command::Portal { command } => {
            let settings = settings.prepare()?;
            cairn::logging::init(&settings.log_format);
            portal(&settings, command).await
        }
        Command::Vuln { command } => {
            let settings = settings.prepare()?;
            cairn::logging::init(&settings.log_format);
            announce_first_run(new_database.as_deref());
            vuln(&settings, command).await
        }
    }
}

/// Says so when this run created the database, so an operator who ran
/// `cairn` from the wrong place or with the wrong settings sees where the
/// new one went.
fn announce_first_run(new_database: Option<&Path>) {
    if let Some(file) = new_database {
        tracing::info!(
            path = %absolute(file).display(),
            "no database was there; created a new one (first run)"
        );
    }
}

/// Commands that read what the service keeps refuse to start on a
/// database that does not exist rather than create an empty one.
fn require_database(settings: &Settings) -> anyhow::Result<()> {
    match settings.sqlite_file() {
        Some(file) if !file.exists() => bail!(
            "no Cairn database at {}: start the service once (`cairn serve`), or point \
             CAIRN_DATA_DIR (or CAIRN_DATABASE_URL) at the existing one",
            absolute(&file).display()
        ),
        _ => Ok(()),
    }
}

/// The service without its connector modules answers 404 to every
/// integration and upload: refuse instead.
fn require_components(dir: &Path) -> anyhow::Result<()> {
    let modules = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "wasm"))
                .count()
        })
        .unwrap_or(0);
    if modules == 0 {
        bail!(
            "no connector modules (.wasm) in {}: install them with `cargo xtask install` \
             from the source checkout, or point CAIRN_CONNECTORS_DIR at the directory \
             that holds them",
            absolute(dir).display()
        );
    }
    Ok(())
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

async fn connectors_list(settings: &Settings) -> anyhow::Result<()> {
    let plugins = cairn_plugins::Plugins::load(settings).await?;
    println!(
        "connectors directory: {}",
        absolute(&settings.connectors_dir).display()
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

/// The documents need the loaded connectors, not the operator's data: the
/// state behind them lives in a scratch directory removed afterwards.
async fn openapi(mut settings: Settings, portal: bool) -> anyhow::Result<()> {
    let scratch = std::env::temp_dir().join(format!("cairn-openapi-{}", uuid::Uuid::new_v4()));
    settings.data_dir = scratch.clone();
    settings.database_url = String::new();
    settings.vuln_schedule = false;
    let settings = settings.prepare()?;
    cairn::logging::init(&settings.log_format);
    let printed = async {
        let state = cairn_platform::app::AppState::new(settings).await?;
        let areas = cairn_platform::area::assemble(
            &state,
            cairn::areas::AREAS,
            cairn_jobs::Registry::default(),
        )?;
        let documents = cairn::http::router(
            &state,
            areas.routes,
            cairn::http::admin::Reloads::detached(),
        )
        .1;
        state.db.close().await;
        let doc = if portal {
            documents.portal
        } else {
            documents.api
        };
        println!("{}", serde_json::to_string_pretty(&doc)?);
        anyhow::Ok(())
    }
    .await;
    let _ = std::fs::remove_dir_all(&scratch);
    printed
}

async fn vuln(settings: &Settings, command: VulnCommand) -> anyhow::Result<()> {
    use cairn_vulnerabilities::reference::{import, sources};
    let db = cairn_core::db::Db::connect(&settings.database_url, 2).await?;
    db.migrate().await?;
    let config = sources::SourceConfig::from_settings(settings);
    match command {
        VulnCommand::Import { paths } => {
            let started = std::time::Instant::now();
            let mut reports = vec![];
            for path in &paths {
                let spinner = progress::Bar::spinner_for(format!("importing {}", path.display()));
                let imported = import::import_paths(&db, std::slice::from_ref(path)).await;
                spinner.finish();
                reports.extend(imported?);
            }
            for r in &reports {
                println!(
                    "{}\t{}\tread {}\twritten {}\tunchanged {}\tskipped {}",
                    r.file, r.kind, r.records, r.written, r.unchanged, r.skipped
                );
                for (why, count) in &r.skipped_by_reason {
                    println!("  skipped {count}: {why}");
                }
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
            load_source(&db, &config, source).await?;
        }
        VulnCommand::Bootstrap => {
            for source in [Source::Kev, Source::Epss, Source::Nvd] {
                load_source(&db, &config, source).await?;
            }
        }
    }
    Ok(())
}

/// Loads one source now, with a progress bar on a terminal, and asks for
/// rescans when CVE records changed.
async fn load_source(
    db: &cairn_core::db::Db,
    config: &cairn_vulnerabilities::reference::sources::SourceConfig,
    source: Source,
) -> anyhow::Result<()> {
    use cairn_vulnerabilities::reference::sources;
    let (name, run) = match source {
        Source::Nvd => {
            let bar = progress::Bar::new("nvd: CVE records");
            let run = sources::sync_nvd(db, config, &bar).await;
            bar.finish();
            (sources::NVD, run)
        }
        // One download each: a spinner, not a bar.
        Source::Kev | Source::Epss => {
            let (name, label) = match source {
                Source::Kev => (sources::KEV, "kev: downloading the catalog"),
                _ => (sources::EPSS, "epss: downloading the scores"),
            };
            let spinner = progress::Bar::spinner(label);
            let run = match source {
                Source::Kev => sources::sync_kev(db, config).await,
                _ => sources::sync_epss(db, config).await,
            };
            spinner.finish();
            (name, run)
        }
    };
    let run = run.with_context(|| format!("loading {name} failed"))?;
    println!(
        "{name}: {} requests, {} records, {} written",
        run.requests, run.records, run.written
    );
    if name == sources::NVD && run.written > 0 {
        cairn_vulnerabilities::request_rescans(db).await?;
    }
    Ok(())
}

async fn portal(settings: &Settings, command: PortalCommand) -> anyhow::Result<()> {
    use cairn_portal::clients;
    let db = cairn_core::db::Db::connect(&settings.database_url, 2).await?;
    db.migrate().await?;
    let tenant_of = async |id: String| -> anyhow::Result<TenantId> {
        let tenant = TenantId(id);
        if cairn_platform::tenancy::name_of(&db, &tenant)
            .await?
            .is_none()
        {
            bail!(
                "no tenant {} in this database (a tenant's id is in GET /api/v1/tenant)",
                tenant.as_str()
            );
        }
        Ok(tenant)
    };
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
            let tenant = tenant_of(tenant).await?;
            let client = clients::create(&db, &tenant, &name).await?;
            println!("{}\t{}", client.id, client.name);
        }
        PortalCommand::Clients { tenant } => {
            let tenant = tenant_of(tenant).await?;
            for client in clients::list(&db, &tenant).await? {
                println!("{}\t{}\t{}", client.id, client.name, client.created_at);
            }
        }
        PortalCommand::MintKey {
            tenant,
            client,
            label,
        } => {
            let tenant = tenant_of(tenant).await?;
            let id = client_id(&tenant, &client).await?;
            let minted = clients::mint_key(&db, &tenant, &id, label.as_deref()).await?;
            println!("{}", minted.key);
            eprintln!("key id {} (shown once; store it now)", minted.view.id);
        }
        PortalCommand::Keys { tenant, client } => {
            let tenant = tenant_of(tenant).await?;
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
            let tenant = tenant_of(tenant).await?;
            if !clients::revoke_key(&db, &tenant, &key_id).await? {
                bail!("no key {key_id} in that tenant");
            }
            println!("revoked {key_id}");
        }
    }
    Ok(())
}
