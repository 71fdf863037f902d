//! Access control: who a connection is and what the ACL file lets it do.
//!
//! All of it pure; the reactor's gate (src/reactor/gate.rs) puts the parts together.
//!
//! - `acl`: the `--acl` file, parsed and matched; `acl_tests`: its unit tests.
//! - `classify`: what each request needs (Gearman packets, admin lines, HTTP routes).
//! - `token`: a bearer secret into the digest the file names.
//! - `denials`: refusals counted for `/metrics`.
//! - `peer`: what the gate knows of a connection from its accept.

pub mod acl;
pub mod classify;
pub mod denials;
pub mod peer;
pub mod token;

use std::path::PathBuf;

pub use acl::{Acl, AclError, Identity, Operation};

/// The serve flags about access.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessConfig {
    /// `--acl FILE`: without it everything is allowed (protected mode aside).
    pub acl: Option<PathBuf>,
    /// `--protected-mode` (on unless `no`).
    pub protected_mode: bool,
    /// `--acl-denials-logged`: denials logged per connection before the rest are only counted.
    pub denials_logged: u32,
    /// `--acl-metric-identities`: identities counted by name in /metrics.
    pub metric_identities: usize,
}

impl Default for AccessConfig {
    fn default() -> Self {
        AccessConfig {
            acl: None,
            protected_mode: true,
            denials_logged: 10,
            metric_identities: 100,
        }
    }
}

/// Read and parse an ACL file (a regular file only: `config_file`); the error is
/// `FILE:LINE:COL: message`.
pub fn read_acl(path: &std::path::Path) -> Result<Acl, String> {
    let text = crate::config_file::read_text(path)?;
    Acl::parse(&text).map_err(|e| format!("{}:{e}", path.display()))
}
