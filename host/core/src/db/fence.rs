//! The right to write, checked inside the write's own transaction.
//!
//! A job's run may lose its job (a pause past its lease, a lost
//! connection) while another process takes the job over and finishes it.
//! Every write such a run makes to shared state must then change nothing.
//! An area's write functions take a [`WriteFence`] and hold it in the same
//! transaction as their rows, so the check and the write commit together.
//! The job queue's context is the fence of a job's writes; [`NoFence`]
//! stands for writes made outside a job (tests, one-off tools).

use async_trait::async_trait;
use sqlx::{Any, Transaction};

/// Something that must still hold when a transaction's writes commit.
#[async_trait]
pub trait WriteFence: Send + Sync {
    /// Holds the fence for `tx` until it ends (a row lock, so nothing can
    /// take the right away between this check and the commit); false when
    /// the right to write is already gone.
    async fn hold(&self, tx: &mut Transaction<'_, Any>) -> sqlx::Result<bool>;
}

/// Writes outside a job: always allowed.
pub struct NoFence;

#[async_trait]
impl WriteFence for NoFence {
    async fn hold(&self, _tx: &mut Transaction<'_, Any>) -> sqlx::Result<bool> {
        Ok(true)
    }
}

/// Why a fenced write wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum FencedError {
    /// The writer lost its right to write (another run owns the job now).
    #[error("this run lost its job to another worker; it wrote nothing")]
    Lost,
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// Holds `fence` for `tx`, or fails with [`FencedError::Lost`].
pub async fn hold(
    fence: &dyn WriteFence,
    tx: &mut Transaction<'_, Any>,
) -> Result<(), FencedError> {
    if fence.hold(tx).await? {
        Ok(())
    } else {
        Err(FencedError::Lost)
    }
}
