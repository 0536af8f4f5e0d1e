//! One face per area. Every area of the service is built by one function
//! from the state, `fn area(state: &AppState) -> anyhow::Result<Area>`,
//! that returns what it adds: its routes, the handlers of its job kinds
//! and its schedules. The binary lists those functions once
//! (`cairn::areas`) and [`assemble`] mounts the routes, installs the
//! handlers in the queue and collects the schedules; adding an area is
//! one function and one line in that list.
//!
//! Routes keep their full paths (`/api/v1/news-feeds/...`) in their
//! `#[utoipa::path]`: the path a client reads in the OpenAPI document is
//! the one a reader finds in the code, and collection paths that end in
//! `/` stay as the spec spells them (a nested `/` would lose it).

use anyhow::Context;
use cairn_jobs::schedule::Schedule;
use cairn_jobs::Registry;
use utoipa_axum::router::OpenApiRouter;

use crate::app::AppState;

/// What an area adds to the service.
pub struct Area {
    /// The area's name, for errors and logs.
    pub name: &'static str,
    pub routes: OpenApiRouter<AppState>,
    pub jobs: Registry,
    pub schedules: Vec<Schedule>,
}

impl Area {
    /// An area that adds nothing yet.
    pub fn new(name: &'static str) -> Area {
        Area {
            name,
            routes: OpenApiRouter::new(),
            jobs: Registry::default(),
            schedules: Vec::new(),
        }
    }

    /// Adds routes whose paths are relative to `prefix`, where they are
    /// served. A prefix ending in `/` keeps its slash: a route at `/`
    /// answers at the prefix itself (`/api/v1/tags/`, the way the spec
    /// writes some collections) and `/{id}` at `/api/v1/tags/{id}`; without
    /// the slash, `/` answers at `/api/v1/dashboards`.
    pub fn routes(mut self, prefix: &str, routes: OpenApiRouter<AppState>) -> Area {
        self.routes = self.routes.merge(OpenApiRouter::new().nest(prefix, routes));
        self
    }

    /// Sets the area's job handlers; a kind another area also defines
    /// fails at [`assemble`].
    pub fn jobs(mut self, jobs: Registry) -> Area {
        self.jobs = jobs;
        self
    }

    /// Adds a schedule.
    pub fn schedule(mut self, schedule: Schedule) -> Area {
        self.schedules.push(schedule);
        self
    }

    /// Adds a schedule when the operator turned it on.
    pub fn schedule_if(self, on: bool, schedule: impl FnOnce() -> Schedule) -> Area {
        if on {
            self.schedule(schedule())
        } else {
            self
        }
    }
}

/// The function every area has.
pub type AreaFn = fn(&AppState) -> anyhow::Result<Area>;

/// What the areas add up to once assembled.
pub struct Assembled {
    /// Every area's routes, merged.
    pub routes: OpenApiRouter<AppState>,
    /// Every area's schedules, for `cairn_jobs::schedule::run`.
    pub schedules: Vec<Schedule>,
}

/// Builds `areas` from `state`, installs their job handlers (with
/// `extra_jobs`, the kinds tests and tools add) in the state's queue and
/// merges their routes. Fails on an area that cannot start and on a job
/// kind two areas define.
pub fn assemble(
    state: &AppState,
    areas: &[AreaFn],
    extra_jobs: Registry,
) -> anyhow::Result<Assembled> {
    let (assembled, jobs) = build(state, areas, extra_jobs)?;
    state.jobs.install(jobs)?;
    Ok(assembled)
}

/// Builds `areas` from `state` again (the plugins serving changed): their
/// merged routes and their job handlers with `extra_jobs`, for the caller
/// to put in place (`Queue::replace`) once everything built. Schedules are
/// left as they were; none depends on the plugins.
pub fn rebuild(
    state: &AppState,
    areas: &[AreaFn],
    extra_jobs: Registry,
) -> anyhow::Result<(OpenApiRouter<AppState>, Registry)> {
    let (assembled, jobs) = build(state, areas, extra_jobs)?;
    Ok((assembled.routes, jobs))
}

fn build(
    state: &AppState,
    areas: &[AreaFn],
    mut extra_jobs: Registry,
) -> anyhow::Result<(Assembled, Registry)> {
    let mut routes = OpenApiRouter::new();
    let mut schedules = Vec::new();
    for build in areas {
        let area = build(state)?;
        extra_jobs
            .merge(area.jobs)
            .with_context(|| format!("the {} area's jobs", area.name))?;
        routes = routes.merge(area.routes);
        schedules.extend(area.schedules);
    }
    Ok((Assembled { routes, schedules }, extra_jobs))
}
