//! `sqlx::migrate!` embeds `migrations/` into the binary at compile time,
//! and cargo does not watch that folder on its own: without this, a new
//! migration is left out of an incremental build.
fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
