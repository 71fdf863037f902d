//! Access control (issue 17): who a connection is and what the ACL file lets it do.
//!
//! Pure: `acl` parses and matches the `--acl` file; the reactor's gate (issue 15 item 3) will
//! classify each request into an `Operation` and a function and ask `Acl::allows`. An access
//! rule is added here, in `acl.rs`, and nowhere else.

pub mod acl;
pub mod classify;

pub use acl::{Acl, AclError, Identity, Operation};
