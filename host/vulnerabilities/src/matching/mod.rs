//! Matching: which CVEs an installed version is exposed to. Reads the
//! reference data, writes nothing.
//!
//! - `identify`: an application to its CPE product (the tenant's mapping,
//!   the shipped translation table, then the dictionary, where vendor and
//!   product must agree);
//! - `ranges`: a version against a product's match rows, with provenance
//!   and fix (pure);
//! - `packages`: Linux distribution packages against their distribution's
//!   advisories, in `package_versions`' order for their family.
//!
//! The verdict golden set (`golden`, a test) runs real rows through these
//! steps as a scan does.

#[cfg(test)]
mod golden;
pub mod identify;
pub mod package_versions;
pub mod packages;
pub mod ranges;
