//! Job handlers from closures, for the tests of the queue.

use std::time::Duration;

use async_trait::async_trait;
use cairn_jobs::{JobContext, JobFailure, JobHandler, Registry};

/// A handler from a closure.
pub struct FnHandler<F>(pub F);

#[async_trait]
impl<F, Fut> JobHandler for FnHandler<F>
where
    F: Fn(JobContext) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), JobFailure>> + Send + 'static,
{
    async fn run(&self, ctx: &JobContext) -> Result<(), JobFailure> {
        (self.0)(ctx.clone()).await
    }
}

/// A registry running `f` for each of `kinds`, with `stall` as the guard.
pub fn registry_with<F, Fut>(kinds: &[&str], stall: Duration, f: F) -> Registry
where
    F: Fn(JobContext) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), JobFailure>> + Send + 'static,
{
    let mut registry = Registry::default();
    for kind in kinds {
        registry.register(kind, FnHandler(f.clone()), stall);
    }
    registry
}
