//! The command line's top level: `gearwheel [-V] COMMAND` and the `check` command's flags.
//! The serve flags (`ServeArgs`) stay beside the settings they become, in config.rs; this
//! module uses config, never the other way round.

use std::path::PathBuf;

use argh::FromArgs;

use crate::config::ServeArgs;

#[derive(FromArgs, Debug)]
/// gearwheel: a Gearman job server with on-time future jobs.
pub struct Cli {
    /// print the version and exit
    #[argh(switch, short = 'V')]
    pub version: bool,
    #[argh(subcommand)]
    pub command: Option<Command>,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
// Parsed once at start; boxing ServeArgs would only complicate argh's derive.
#[allow(clippy::large_enum_variant)]
pub enum Command {
    Serve(ServeArgs),
    Work(super::WorkArgs),
    Submit(super::SubmitArgs),
    Admin(super::AdminArgs),
    Check(CheckArgs),
    ImportCrontab(super::import_crontab::ImportCrontabArgs),
    Schedules(super::schedules::SchedulesArgs),
    Ping(super::ping::PingArgs),
}

#[derive(FromArgs, Debug)]
/// Check a schedules file, or with --acl an access list, without a server; errors as
/// FILE:LINE:COL: message.
#[argh(subcommand, name = "check")]
pub struct CheckArgs {
    /// the schedules file
    #[argh(positional)]
    pub file: Option<PathBuf>,
    /// check this access list (the serve --acl file) instead of a schedules file
    #[argh(option)]
    pub acl: Option<PathBuf>,
    /// also print the next N run times of every entry
    #[argh(option, default = "0")]
    pub next: usize,
    /// list run times from this time (RFC 3339 or unix seconds; default now)
    #[argh(option)]
    pub from: Option<String>,
    /// the default time zone of the entries, as the server's --timezone (default local)
    #[argh(option)]
    pub tz: Option<String>,
}
