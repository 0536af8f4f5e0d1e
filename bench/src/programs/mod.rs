//! One module per benchmark program; each has a `main` that reads its
//! arguments through [`crate::args`].

pub mod csv;
pub mod dashboards;
pub mod edr;
pub mod inventory;
pub mod jobs;
pub mod load;
pub mod mdm;
pub mod partner;
pub mod portal;
pub mod psa;
pub mod remediation;
pub mod scanner;
pub mod sync;
pub mod vuln;
