//! One test binary: the repository checks: docs links, generated man pages and changelog, the
//! module graph. Each file in tests/docs/ was a test binary of its own; one binary links
//! tests/support once instead of once per file. Run one file's tests with `cargo test --test docs
//! FILE::` (e.g. `cargo test --test docs changelog::`).

#[path = "../support/mod.rs"]
mod support;

mod changelog;
mod doc_links;
mod man_pages;
mod module_graph;
mod module_maps;
mod reactor_glue;
