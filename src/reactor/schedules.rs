//! The schedules file: read at start, again on SIGHUP and `reload schedules` (or taken from
//! etcd when a cluster pushed one), and handed to the engine; a file with errors changes nothing.

use std::path::PathBuf;

use log::{error, warn};

use super::Server;

impl Server {
    /// Load the schedules file for the first time (`@reboot` entries fire, missed runs of
    /// `catchup=last` entries are made up). Returns the entries' count and what the load did;
    /// errors name the file, line and column.
    pub fn load_schedules(
        &mut self,
        path: PathBuf,
    ) -> Result<(usize, crate::engine::LoadReport), Vec<String>> {
        let now = self.time.clock.now_ms();
        let file = read_schedules(&path, &self.config.engine.zone)?;
        let n = file.entries.len();
        if let Some(l) = self.cluster.as_mut() {
            l.publish_schedules(&file.entries);
        }
        if !self.journal.enabled() {
            let last = crate::schedule::file::Catchup::Last;
            for e in file.entries.iter().filter(|e| e.catchup == last) {
                warn!(
                    "schedule {}: without --data-dir, catchup=last cannot make up runs missed while the server was down",
                    e.id
                );
            }
        }
        let report = self
            .engine
            .load_schedules(file, now, true, &mut self.outbox);
        self.schedules_path = Some(path);
        Ok((n, report))
    }

    /// `gearwheel schedules push` stored a file in etcd: load it as a reload would (the same
    /// validation; a refused file leaves the running schedule and the last pushed text).
    pub(super) fn load_pushed_schedules(&mut self, text: String, wall: u64) {
        let Some(l) = self.cluster.as_mut() else {
            return;
        };
        let before = l.pushed.replace(text);
        if self.reload_schedules(wall).is_err() {
            if let Some(l) = self.cluster.as_mut() {
                l.pushed = before;
            }
        }
    }

    /// Read the schedules file again. A file with any error leaves the running schedule as it
    /// is; every error is logged and the first is returned.
    pub(super) fn reload_schedules(&mut self, now: u64) -> Result<usize, String> {
        let pushed = self.cluster.as_ref().and_then(|l| l.pushed.clone());
        // A file pushed through etcd stays the running one until the next push.
        let (name, read) = match (pushed, &self.schedules_path) {
            (Some(text), _) => (
                "the schedules file pushed to etcd".to_string(),
                crate::schedule::file::parse(&text, &self.config.engine.zone)
                    .map_err(|e| e.iter().map(|e| format!("pushed schedules:{e}")).collect()),
            ),
            (None, Some(path)) => (
                path.display().to_string(),
                read_schedules(path, &self.config.engine.zone),
            ),
            (None, None) => {
                return Err("no schedules file (start with --schedules FILE)".into());
            }
        };
        match read {
            Ok(file) => {
                let n = file.entries.len();
                if let Some(l) = self.cluster.as_mut() {
                    l.publish_schedules(&file.entries);
                }
                let kept = self
                    .engine
                    .load_schedules(file, now, false, &mut self.outbox)
                    .kept;
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
pub fn read_schedules(
    path: &std::path::Path,
    zone: &crate::schedule::Zone,
) -> Result<crate::schedule::file::ScheduleFile, Vec<String>> {
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
