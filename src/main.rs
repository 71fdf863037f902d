//! The `gearwheel` command: flags to settings, logging, signals, the pid file and exit codes.
//! No protocol and no jobs here.

use std::process::ExitCode;

use argh::FromArgs;
use gearwheel::cli::args::{Cli, Command};
use gearwheel::config::{Config, split_equals};
use gearwheel::logger;
use gearwheel::reactor::{Exit, Server, Signals};
use log::Level;

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn main() -> ExitCode {
    let raw: Vec<String> = std::env::args().collect();
    let cmd_name = raw.first().map(|s| s.as_str()).unwrap_or("gearwheel");
    let args = gearwheel::cli::prepare_args(split_equals(raw.iter().skip(1).cloned()));
    let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    let cli = match Cli::from_args(&[cmd_name], &refs) {
        Ok(c) => c,
        Err(e) if e.status.is_ok() => {
            // --help
            let sub = args.first().map(String::as_str);
            print!("{}", gearwheel::cli::help::finish(&e.output, sub));
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
        Some(Command::Work(a)) => ExitCode::from(gearwheel::cli::work::run(a)),
        Some(Command::Submit(a)) => ExitCode::from(gearwheel::cli::submit::run(a)),
        Some(Command::Admin(a)) => ExitCode::from(gearwheel::cli::admin::run(a)),
        Some(Command::Check(a)) => check(a),
        Some(Command::ImportCrontab(a)) => ExitCode::from(gearwheel::cli::import_crontab::run(a)),
        Some(Command::Schedules(a)) => ExitCode::from(gearwheel::cli::schedules::run(a)),
        Some(Command::Ping(a)) => ExitCode::from(gearwheel::cli::ping::run(a)),
        None => {
            eprintln!(
                "gearwheel: no command given; try `gearwheel serve --help` (or work, submit, admin)"
            );
            ExitCode::from(2)
        }
    }
}

fn serve(args: gearwheel::config::ServeArgs) -> ExitCode {
    // With -d, stderr goes to /dev/null unless the log was asked for there by name.
    let log_to_stderr = matches!(args.log_file.as_deref(), Some("stderr" | "-"));
    let log_given = args.log_file.is_some();
    let mut config = match Config::from_args(args, std::env::var("GEARMAND_PORT").ok()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("gearwheel: {e}");
            return ExitCode::from(2);
        }
    };
    let mut detached = None;
    if config.daemon {
        // The daemon runs in /, so relative paths are made absolute while they still mean
        // what the user meant.
        if let Err(e) = absolute_paths(&mut config) {
            eprintln!("gearwheel: {e}");
            return ExitCode::from(1);
        }
        if !log_given {
            eprintln!("gearwheel: --daemon without --log-file: log lines are discarded");
        }
        match service::detach() {
            Ok(service::Detached::Parent(code)) => return ExitCode::from(code),
            Ok(service::Detached::Child(ready)) => {
                config.engine.pid = std::process::id();
                detached = Some(ready);
            }
            Err(e) => {
                eprintln!("gearwheel: cannot detach: {e}");
                return ExitCode::from(1);
            }
        }
    }
    // A detached child tells its waiting parent how the start went, so `serve -d` exits with
    // the same code a foreground start would.
    let fail = |code: u8, detached: Option<service::Ready>| {
        if let Some(r) = detached {
            r.report(code);
        }
        ExitCode::from(code)
    };
    if let Err(e) = logger::init(config.log_target.clone(), config.log_level) {
        eprintln!("gearwheel: cannot open the log file: {e}");
        return fail(2, detached);
    }
    for n in &config.notices {
        log::warn!("{n}");
    }
    let pid_file = config.pid_file.clone();
    let user = config.user.clone();
    let schedules = config.schedules.clone();
    let journal = config
        .data_dir
        .clone()
        .map(|d| (d, config.fsync, config.repair));
    // The certificate files are read now, so that a bad one stops the start (exit 2).
    let tls = match gearwheel::reactor::TlsSetup::load(&config) {
        Ok(t) => t,
        Err(e) => {
            logger::announce(Level::Error, &e);
            return fail(2, detached);
        }
    };
    let mut server = match Server::bind(config, tls) {
        Ok(s) => s,
        Err(e) => {
            logger::announce(Level::Error, &e.to_string());
            return fail(1, detached);
        }
    };
    // Before any connection is served: a bad access list stops the start (exit 2), as a bad
    // flag does.
    if let Err(e) = server.load_acl() {
        logger::announce(Level::Error, &e);
        return fail(2, detached);
    }
    // The data directory is opened (and locked) before privileges are dropped.
    match &journal {
        Some((dir, fsync, repair)) => match server.open_journal(dir, *fsync, *repair) {
            Ok(line) => gearwheel::notice!("{line}"),
            Err(e) => {
                logger::announce(Level::Error, &e);
                return fail(1, detached);
            }
        },
        // Said whatever the log level: the default (ERROR) would hide it, and a newcomer who
        // did not ask for a journal should learn that nothing survives a restart.
        None => logger::announce(
            Level::Warn,
            "no --data-dir: the queue is in memory, and background jobs and schedule runs are lost at exit",
        ),
    }
    if let Some(p) = &pid_file {
        if let Err(e) = std::fs::write(p, format!("{}\n", std::process::id())) {
            logger::announce(
                Level::Error,
                &format!("cannot write pid file {}: {e}", p.display()),
            );
            return fail(1, detached);
        }
    }
    // Listeners are bound (and the pid file written) with the privileges we started with;
    // everything after runs as the user.
    if let Some(u) = &user {
        if let Err(e) = service::drop_privileges(u) {
            logger::announce(Level::Error, &e);
            if let Some(p) = &pid_file {
                let _ = std::fs::remove_file(p);
            }
            return fail(1, detached);
        }
        gearwheel::notice!("running as user {} (uid {}, gid {})", u.name, u.uid, u.gid);
    }
    match Signals::install() {
        Ok(s) => {
            if let Err(e) = server.set_signals(s) {
                logger::announce(Level::Error, &format!("cannot watch signals: {e}"));
                return fail(1, detached);
            }
        }
        Err(e) => {
            logger::announce(
                Level::Error,
                &format!("cannot install signal handlers: {e}"),
            );
            return fail(1, detached);
        }
    }
    if let Some(path) = schedules {
        match server.load_schedules(path.clone()) {
            Ok((n, report)) => gearwheel::notice!(
                "schedules: {} from {}{}",
                gearwheel::plural::count(n as u64, "entry", "entries"),
                path.display(),
                // Entries of this file only: one removed from it is not recovered.
                if journal.is_some() {
                    format!(", {} with history from the journal", report.restored)
                } else {
                    String::new()
                }
            ),
            Err(errors) => {
                for e in &errors {
                    logger::announce(Level::Error, e);
                }
                if let Some(p) = &pid_file {
                    let _ = std::fs::remove_file(p);
                }
                return fail(2, detached);
            }
        }
    }
    for a in server.local_addrs() {
        // Tests and scripts read this line to learn a port-0 address, so it is always printed.
        logger::announce(Level::Info, &format!("Listening on {a}"));
    }
    for a in server.ssl_addrs() {
        logger::announce(Level::Info, &format!("TLS listening on {a}"));
    }
    for a in server.http_addrs() {
        logger::announce(Level::Info, &format!("HTTP listening on {a}"));
    }
    if server.tls_everywhere() {
        logger::announce(Level::Info, "TLS (--ssl) on every listener, HTTP included");
    }
    gearwheel::notice!("gearwheel {VERSION} started");
    if let Some(ready) = detached.take() {
        if let Err(e) = service::null_stdio(!log_to_stderr) {
            log::warn!("cannot point stdio at /dev/null: {e}");
        }
        ready.report(0);
    }
    if let Err(e) = service::sd_notify("READY=1") {
        log::warn!("cannot tell systemd we are ready (NOTIFY_SOCKET): {e}");
    }
    let result = server.run();
    let _ = service::sd_notify("STOPPING=1");
    if let Some(p) = &pid_file {
        let _ = std::fs::remove_file(p);
    }
    match result {
        Ok(Exit::Stopped) | Ok(Exit::Graceful) => {
            gearwheel::notice!("stopped");
            ExitCode::SUCCESS
        }
        Err(e) => {
            logger::announce(Level::Error, &format!("event loop failed: {e}"));
            ExitCode::from(1)
        }
    }
}

fn absolute_paths(config: &mut Config) -> Result<(), String> {
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    if let Some(p) = &mut config.pid_file {
        *p = cwd.join(&*p);
    }
    if let logger::LogTarget::File(p) = &mut config.log_target {
        *p = cwd.join(&*p);
    }
    // Read again on SIGHUP, long after the chdir.
    if let Some(p) = &mut config.schedules {
        *p = cwd.join(&*p);
    }
    if let Some(p) = &mut config.access.acl {
        *p = cwd.join(&*p);
    }
    if let Some(t) = &mut config.tls {
        for p in [&mut t.certificate, &mut t.key]
            .into_iter()
            .chain(t.ca_file.as_mut())
        {
            *p = cwd.join(&*p);
        }
    }
    Ok(())
}

/// Running as a service: detaching (-d), dropping privileges (-u), and systemd's readiness
/// notification. Plain libc calls; nothing here knows about Gearman.
mod service {
    use std::ffi::CString;
    use std::io;

    use gearwheel::config::RunAs;

    pub enum Detached {
        /// The process that was started: exit with this code.
        Parent(u8),
        /// The daemon: report how the start went through this.
        Child(Ready),
    }

    /// The write end of the pipe the parent waits on.
    pub struct Ready(libc::c_int);

    impl Ready {
        /// Tell the parent the exit code to leave with (0: listening).
        pub fn report(self, code: u8) {
            // SAFETY: writes one byte from a live buffer to our own pipe, then closes it.
            unsafe {
                libc::write(self.0, [code].as_ptr().cast(), 1);
                libc::close(self.0);
            }
        }
    }

    fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
        if rc == -1 {
            Err(io::Error::last_os_error())
        } else {
            Ok(rc)
        }
    }

    /// Fork. The parent waits until the child reports (or dies) and returns its code; the
    /// child starts a new session, moves to `/` and closes every inherited descriptor but
    /// stdio. Called before any thread exists.
    pub fn detach() -> io::Result<Detached> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 fills the two-element array it is given.
        check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
        let [rd, wr] = fds;
        // SAFETY: the process has one thread here, so the child may go on running Rust code.
        let pid = check(unsafe { libc::fork() })?;
        if pid > 0 {
            // SAFETY: closing our copy of the write end; reading one byte into a live buffer.
            unsafe { libc::close(wr) };
            let mut b = [0u8; 1];
            let n = loop {
                let n = unsafe { libc::read(rd, b.as_mut_ptr().cast(), 1) };
                if n == -1 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                break n;
            };
            unsafe { libc::close(rd) };
            // No byte: the child died before it could say anything.
            return Ok(Detached::Parent(if n == 1 { b[0] } else { 1 }));
        }
        // SAFETY: plain calls on our own process and descriptors.
        unsafe {
            libc::close(rd);
            libc::setsid();
            libc::chdir(c"/".as_ptr());
        }
        close_inherited(&[0, 1, 2, wr]);
        Ok(Detached::Child(Ready(wr)))
    }

    /// Close every descriptor except `keep` (listed from /proc/self/fd, or up to 1024).
    fn close_inherited(keep: &[libc::c_int]) {
        let fds: Vec<libc::c_int> = match std::fs::read_dir("/proc/self/fd") {
            Ok(dir) => dir
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect(),
            Err(_) => (0..1024).collect(),
        };
        for fd in fds {
            if !keep.contains(&fd) {
                // SAFETY: closing a descriptor nothing in this process uses yet; the one
                // read_dir used is already closed (EBADF is harmless).
                unsafe { libc::close(fd) };
            }
        }
    }

    /// Point stdin, stdout and (if `stderr_too`) stderr at /dev/null.
    pub fn null_stdio(stderr_too: bool) -> io::Result<()> {
        // SAFETY: open/dup2/close on descriptors this process owns.
        unsafe {
            let null = check(libc::open(c"/dev/null".as_ptr(), libc::O_RDWR))?;
            let targets: &[libc::c_int] = if stderr_too { &[0, 1, 2] } else { &[0, 1] };
            for &t in targets {
                check(libc::dup2(null, t))?;
            }
            if null > 2 {
                libc::close(null);
            }
        }
        Ok(())
    }

    /// setgroups (initgroups), setgid, setuid, in that order, and check that root cannot be
    /// had back.
    pub fn drop_privileges(u: &RunAs) -> Result<(), String> {
        // SAFETY: geteuid has no preconditions.
        let euid = unsafe { libc::geteuid() };
        if euid != 0 {
            if euid == u.uid {
                return Ok(());
            }
            return Err(format!(
                "--user {}: only root can switch users (running as uid {euid})",
                u.name
            ));
        }
        let name = CString::new(u.name.clone()).map_err(|_| "--user: NUL in name".to_string())?;
        let fail = |what: &str| {
            format!(
                "--user {}: {what} failed: {}",
                u.name,
                io::Error::last_os_error()
            )
        };
        // SAFETY: plain credential calls with a valid C string.
        unsafe {
            if libc::initgroups(name.as_ptr(), u.gid as _) != 0 {
                return Err(fail("initgroups"));
            }
            if libc::setgid(u.gid) != 0 {
                return Err(fail("setgid"));
            }
            if libc::setuid(u.uid) != 0 {
                return Err(fail("setuid"));
            }
            if u.uid != 0 && libc::setuid(0) == 0 {
                return Err(format!(
                    "--user {}: root privileges could be regained",
                    u.name
                ));
            }
        }
        Ok(())
    }

    /// sd_notify(3) without libsystemd: one datagram to $NOTIFY_SOCKET, which may be a path
    /// or an abstract name (`@...`). Nothing to do when systemd did not ask.
    pub fn sd_notify(msg: &str) -> io::Result<()> {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::net::UnixDatagram;
        let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
            return Ok(());
        };
        let sock = UnixDatagram::unbound()?;
        let bytes = path.as_bytes();
        if let Some(name) = bytes.strip_prefix(b"@") {
            use std::os::linux::net::SocketAddrExt;
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
            sock.send_to_addr(msg.as_bytes(), &addr)?;
        } else {
            sock.send_to(msg.as_bytes(), &path)?;
        }
        Ok(())
    }
}

/// `gearwheel check FILE [--next N] [--from TIME] [--tz ZONE]` and `gearwheel check --acl
/// FILE`: 0 valid, 1 errors, 2 bad flags.
fn check(a: gearwheel::cli::args::CheckArgs) -> ExitCode {
    use gearwheel::schedule::{Zone, check};
    let file = match (a.file, &a.acl) {
        (None, Some(acl)) => {
            return match gearwheel::access::read_acl(acl) {
                Ok(list) => {
                    println!(
                        "{}: {}",
                        acl.display(),
                        gearwheel::plural::count(list.rule_count() as u64, "rule", "rules")
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("{e}");
                    ExitCode::from(1)
                }
            };
        }
        (Some(f), None) => f,
        _ => {
            eprintln!("gearwheel check: give a schedules file, or --acl FILE");
            return ExitCode::from(2);
        }
    };
    let zone = match Zone::parse(a.tz.as_deref().unwrap_or("local")) {
        Ok(z) => z,
        Err(e) => {
            eprintln!("gearwheel check: --tz: {e}");
            return ExitCode::from(2);
        }
    };
    let from = match a.from.as_deref().map(check::parse_time).transpose() {
        Ok(t) => t.unwrap_or_else(chrono::Utc::now),
        Err(e) => {
            eprintln!("gearwheel check: --from {e}");
            return ExitCode::from(2);
        }
    };
    let name = file.display().to_string();
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{name}: {e}");
            return ExitCode::from(1);
        }
    };
    let (report, ok) = check::check(&name, &text, &zone, a.next, from);
    if ok {
        print!("{report}");
        ExitCode::SUCCESS
    } else {
        eprint!("{report}");
        ExitCode::from(1)
    }
}
