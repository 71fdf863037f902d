//! Alerts end to end with real components: a PHP (pecl/gearman) worker throws for a schedule
//! entry with `retry=2 on_failure=alert`, and a `gearwheel work -f alert -- sh -c 'cat > FILE'`
//! worker writes the alert it is given to a file, whose JSON is checked field by field.

use crate::support;

use std::process::Command;

use support::*;

#[test]
fn a_php_worker_that_throws_for_an_entry_alerts_a_gearwheel_work_worker() {
    if !require(
        have_php_gearman(),
        "php-cli with the gearman extension (php-gearman)",
    ) {
        return;
    }
    let dir = TempDir::new("interop-alerts");
    let file = dir.join("s.cron");
    // An hourly entry, run by hand: the test decides when it runs. `throw` is worker.php's
    // function that answers WORK_EXCEPTION "boom".
    std::fs::write(
        &file,
        "@every 1h throw id=nightly retry=2 backoff=1s on_failure=alert -- payload\n",
    )
    .unwrap();
    let alert_file = dir.join("alert.json");
    let _ = std::fs::remove_file(&alert_file);
    let s = Server::start(&["--schedules", file.to_str().unwrap()]);
    let php = PHP_SCRIPTS.worker(&s);
    let _notify = Proc::spawn(
        "gearwheel work -f alert",
        Command::new(env!("CARGO_BIN_EXE_gearwheel"))
            .args(["work", "-s", &s.addr.to_string(), "-f", "alert", "--"])
            .args([
                "sh",
                "-c",
                "cat > \"$ALERT_FILE.tmp\" && mv \"$ALERT_FILE.tmp\" \"$ALERT_FILE\"",
            ])
            .env("ALERT_FILE", &alert_file),
        None,
    );
    wait_workers(&s, "alert", 1);

    let mut admin = s.connect();
    let reply = admin.admin("run schedule nightly", false);
    assert!(reply.starts_with("OK H:"), "{reply}");
    let alert = poll(15, "the alert file", || {
        std::fs::read_to_string(&alert_file)
            .map_err(|e| format!("{e}; no alert written; server log:\n{}", s.log()))
    });
    let prefix = "{\"event\":\"failure\",\"entry\":\"nightly\",\"function\":\"throw\",\"outcome\":\"failed\",\"scheduled\":\"20";
    assert!(alert.starts_with(prefix), "{alert}");
    // Three tries (the run and its two retries, 1 s then 2 s apart), one alert, naming the
    // last try's job.
    let tail = "\"manual\":true,\"attempts\":3,\"error\":\"boom\",\"handle\":\"H:";
    assert!(alert.contains(tail), "{tail} in {alert}");
    assert_eq!(
        php.stdout().matches("job throw payload").count(),
        3,
        "{}",
        php.stdout()
    );
    assert!(
        alert.contains("\"started\":\"20") && alert.contains("\"duration_ms\":"),
        "{alert}"
    );
    assert!(alert.ends_with("\"}"), "one JSON object: {alert}");
    let row = admin.schedule_row("nightly");
    assert_eq!(row[13], "boom", "{row:?}");
    assert!(row[14].ends_with(" failed manual"), "{row:?}");
    let _ = std::fs::remove_dir_all(dir);
}
