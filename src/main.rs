//! The `gearwheel` command: flags to settings, logging, signals, the pid file and exit codes.
//! No protocol and no jobs here.

use std::process::ExitCode;

use argh::FromArgs;
use gearwheel::config::{Cli, Command, Config, split_equals};
use gearwheel::logger;
use gearwheel::reactor::{Exit, Server, Signals};

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn main() -> ExitCode {
    let raw: Vec<String> = std::env::args().collect();
    let cmd_name = raw.first().map(|s| s.as_str()).unwrap_or("gearwheel");
    let args = split_equals(raw.iter().skip(1).cloned());
    let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    let cli = match Cli::from_args(&[cmd_name], &refs) {
        Ok(c) => c,
        Err(e) if e.status.is_ok() => {
            // --help
            println!("{}", e.output);
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("{}", e.output);
            return ExitCode::from(2);
        }
    };
    if cli.version {
        println!("gearwheel {VERSION}");
        return ExitCode::SUCCESS;
    }
    match cli.command {
        Some(Command::Serve(a)) => serve(a),
        None => {
            eprintln!("gearwheel: no command given; try `gearwheel serve --help`");
            ExitCode::from(2)
        }
    }
}

fn serve(args: gearwheel::config::ServeArgs) -> ExitCode {
    let config = match Config::from_args(args, std::env::var("GEARMAND_PORT").ok()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("gearwheel: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = logger::init(config.log_target.clone(), config.log_level) {
        eprintln!("gearwheel: cannot open the log file: {e}");
        return ExitCode::from(2);
    }
    for n in &config.notices {
        log::warn!("{n}");
    }
    let pid_file = config.pid_file.clone();
    let mut server = match Server::bind(config) {
        Ok(s) => s,
        Err(e) => {
            log::error!("{e}");
            eprintln!("gearwheel: {e}");
            return ExitCode::from(1);
        }
    };
    match Signals::install() {
        Ok(s) => {
            if let Err(e) = server.set_signals(s) {
                eprintln!("gearwheel: cannot watch signals: {e}");
                return ExitCode::from(1);
            }
        }
        Err(e) => {
            eprintln!("gearwheel: cannot install signal handlers: {e}");
            return ExitCode::from(1);
        }
    }
    for a in server.local_addrs() {
        // Tests and scripts read this line to learn a port-0 address, so it is always printed.
        eprintln!("gearwheel: Listening on {a}");
        log::info!("Listening on {a}");
    }
    log::info!("gearwheel {VERSION} started; the queue is in memory (no --data-dir yet)");
    if let Some(p) = &pid_file {
        if let Err(e) = std::fs::write(p, format!("{}\n", std::process::id())) {
            eprintln!("gearwheel: cannot write pid file {}: {e}", p.display());
            return ExitCode::from(1);
        }
    }
    let result = server.run();
    if let Some(p) = &pid_file {
        let _ = std::fs::remove_file(p);
    }
    match result {
        Ok(Exit::Stopped) | Ok(Exit::Graceful) => {
            log::info!("stopped");
            ExitCode::SUCCESS
        }
        Err(e) => {
            log::error!("event loop failed: {e}");
            eprintln!("gearwheel: event loop failed: {e}");
            ExitCode::from(1)
        }
    }
}
