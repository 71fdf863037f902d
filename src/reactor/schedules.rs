//! The schedules file: read at start, again on SIGHUP and `reload schedules` (or taken from
//! etcd when a cluster pushed one), and handed to the engine; a file with errors changes nothing.

use std::path::PathBuf;

use log::{error, warn};

use super::etcd_link::EtcdLink;
use crate::engine::{Engine, LoadReport, Outbox};
use crate::schedule::Zone;
use crate::schedule::file::ScheduleFile;

/// The schedules file in force: where it is read from, and the zone its times are in.
pub(super) struct Schedules {
    /// Set by the first load (`--schedules`); none: a reload has nothing to read.
    path: Option<PathBuf>,
    zone: Zone,
}

impl Schedules {
    pub(super) fn new(zone: Zone) -> Schedules {
        Schedules { path: None, zone }
    }

    /// A schedules file was loaded at start: SIGHUP reads it again.
    pub(super) fn is_set(&self) -> bool {
        self.path.is_some()
    }

    /// Load the schedules file for the first time (`@reboot` entries fire, missed runs of
    /// `catchup=last` entries are made up); `journal`: a journal keeps the runs' history.
    /// Returns the entries' count and what the load did; errors name the file, line and
    /// column.
    pub(super) fn load(
        &mut self,
        path: PathBuf,
        journal: bool,
        engine: &mut Engine,
        outbox: &mut Outbox,
        cluster: Option<&mut EtcdLink>,
        now: u64,
    ) -> Result<(usize, LoadReport), Vec<String>> {
        let file = read_schedules(&path, &self.zone)?;
        let n = file.entries.len();
        if let Some(l) = cluster {
            l.publish_schedules(&file.entries);
        }
        if !journal {
            use crate::schedule::file::Catchup;
            for e in file.entries.iter() {
                let word = match e.catchup {
                    Catchup::None => continue,
                    Catchup::Last => "last",
                    Catchup::All { .. } => "all",
                };
                warn!(
                    "schedule {}: without --data-dir, catchup={word} cannot make up runs missed while the server was down",
                    e.id
                );
            }
        }
        let report = engine.load_schedules(file, now, true, outbox);
        self.path = Some(path);
        Ok((n, report))
    }

    /// `gearwheel schedules push` stored a file in etcd: load it as a reload would (the same
    /// validation; a refused file leaves the running schedule and the last pushed text).
    pub(super) fn load_pushed(
        &self,
        text: String,
        engine: &mut Engine,
        outbox: &mut Outbox,
        cluster: &mut EtcdLink,
        wall: u64,
    ) -> Result<usize, String> {
        let before = cluster.pushed.replace(text);
        let loaded = self.reload(engine, outbox, Some(&mut *cluster), wall);
        if loaded.is_err() {
            cluster.pushed = before;
        }
        cluster.machine.push_loaded();
        loaded
    }

    /// Read the schedules file again. A file with any error leaves the running schedule as it
    /// is; every error is logged and the first is returned.
    pub(super) fn reload(
        &self,
        engine: &mut Engine,
        outbox: &mut Outbox,
        cluster: Option<&mut EtcdLink>,
        now: u64,
    ) -> Result<usize, String> {
        let pushed = cluster.as_ref().and_then(|l| l.pushed.clone());
        // A file pushed through etcd stays the running one until the next push.
        let (name, read) = match (pushed, &self.path) {
            (Some(text), _) => (
                "the schedules file pushed to etcd".to_string(),
                crate::schedule::file::parse(&text, &self.zone)
                    .map_err(|e| e.iter().map(|e| format!("pushed schedules:{e}")).collect()),
            ),
            (None, Some(path)) => (path.display().to_string(), read_schedules(path, &self.zone)),
            (None, None) => {
                return Err("no schedules file (start with --schedules FILE)".into());
            }
        };
        match read {
            Ok(file) => {
                let n = file.entries.len();
                if let Some(l) = cluster {
                    l.publish_schedules(&file.entries);
                }
                let kept = engine.load_schedules(file, now, false, outbox).kept;
                crate::notice!(
                    "reloaded {name}: {}, next run kept for {kept}",
                    crate::plural::count(n as u64, "entry", "entries")
                );
                Ok(n)
            }
            Err(errors) => {
                for e in &errors {
                    error!("{e}");
                }
                error!("reload of {name} refused; the running schedule is unchanged");
                Err(errors.into_iter().next().unwrap_or_default())
            }
        }
    }
}

/// Read and parse a schedules file (a regular file only: `config_file`); errors as
/// `FILE:LINE:COL: message`.
pub fn read_schedules(path: &std::path::Path, zone: &Zone) -> Result<ScheduleFile, Vec<String>> {
    let text = crate::config_file::read_text(path).map_err(|e| vec![e])?;
    match crate::schedule::file::parse(&text, zone) {
        Ok(f) => {
            for w in &f.warnings {
                warn!("{}:{w}", path.display());
            }
            Ok(f)
        }
        Err(errors) => Err(errors
            .iter()
            .map(|e| format!("{}:{e}", path.display()))
            .collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of `text` in the test's own directory, removed with it.
    struct File(PathBuf);

    impl File {
        fn new(name: &str, text: &str) -> File {
            let dir = std::env::temp_dir()
                .join(format!("gearwheel-schedules-{}-{name}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("dir");
            let path = dir.join("schedules");
            std::fs::write(&path, text).expect("write");
            File(path)
        }
    }

    impl Drop for File {
        fn drop(&mut self) {
            if let Some(dir) = self.0.parent() {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }

    fn engine() -> Engine {
        Engine::new(crate::engine::EngineConfig::default())
    }

    #[test]
    fn without_a_file_a_reload_has_nothing_to_read() {
        let s = Schedules::new(Zone::Utc);
        let (mut engine, mut outbox) = (engine(), Outbox::default());
        let e = s.reload(&mut engine, &mut outbox, None, 0).unwrap_err();
        assert!(e.contains("--schedules FILE"), "{e}");
        assert!(!s.is_set());
    }

    #[test]
    fn a_reload_with_errors_keeps_the_running_schedule() {
        let f = File::new("reload", "@every 10s heartbeat\n*/5 * * * * cleanup\n");
        let mut s = Schedules::new(Zone::Utc);
        let (mut engine, mut outbox) = (engine(), Outbox::default());
        let (n, _) = s
            .load(f.0.clone(), false, &mut engine, &mut outbox, None, 0)
            .expect("load");
        assert_eq!((n, s.is_set()), (2, true));
        std::fs::write(&f.0, "@every 10s heartbeat\nnot a line\n").expect("write");
        let e = s.reload(&mut engine, &mut outbox, None, 1_000).unwrap_err();
        assert!(e.contains(":2:"), "{e}");
        assert_eq!(engine.totals().schedules, 2);
        std::fs::write(&f.0, "@every 10s heartbeat\n").expect("write");
        assert_eq!(s.reload(&mut engine, &mut outbox, None, 2_000), Ok(1));
        assert_eq!(engine.totals().schedules, 1);
    }
}
