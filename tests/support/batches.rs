//! A checkpointed test job kind: applies numbered batches, each in one
//! transaction with the checkpoint that says which batch comes next, so a
//! batch is applied exactly once however often the job is interrupted.

use std::time::Duration;

use async_trait::async_trait;
use cairn_jobs::{JobContext, JobFailure, JobHandler};
use serde_json::json;

pub const KIND: &str = "test_batches";

pub struct Batches;

#[async_trait]
impl JobHandler for Batches {
    async fn run(&self, ctx: &JobContext) -> Result<(), JobFailure> {
        let db = ctx.db();
        sqlx::query(
            "CREATE TABLE IF NOT EXISTS test_batches_applied \
             (job_id TEXT NOT NULL, batch BIGINT NOT NULL, attempt BIGINT NOT NULL)",
        )
        .execute(&db.pool)
        .await?;
        let total = ctx.args()["batches"].as_i64().unwrap_or(10);
        let delay = Duration::from_millis(ctx.args()["delay_ms"].as_u64().unwrap_or(50));
        let mut next = ctx
            .checkpoint()
            .and_then(|c| c["next"].as_i64())
            .unwrap_or(0);
        // At this batch the run holds its job's row in a transaction and
        // blocks its thread for good, as a run on a job thread starved of
        // CPU would (the shutdown tests' deadline).
        let starve_at = ctx.args()["starve_at"].as_i64();
        while next < total {
            let mut tx = db.pool.begin().await?;
            if starve_at == Some(next) {
                ctx.save_checkpoint_in(&mut tx, &json!({"next": next, "starved": true}))
                    .await?;
                std::thread::sleep(Duration::from_secs(3600));
            }
            sqlx::query(
                "INSERT INTO test_batches_applied (job_id, batch, attempt) VALUES ($1, $2, $3)",
            )
            .bind(ctx.job_id())
            .bind(next)
            .bind(ctx.attempt())
            .execute(&mut *tx)
            .await?;
            ctx.save_checkpoint_in(&mut tx, &json!({"next": next + 1}))
                .await?;
            tx.commit().await?;
            next += 1;
            ctx.progress("applying", next, total, "batches", "").await?;
            tokio::time::sleep(delay).await;
        }
        Ok(())
    }
}
