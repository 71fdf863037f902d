//! Far peers from a private network namespace: a test that needs a peer beyond loopback runs
//! its body again in a child of its own binary, inside a new network namespace (`unshare -n`)
//! where loopback is up and also carries `FAR` and `FAR2`, addresses of no real network. In
//! there the server listens on 0.0.0.0, a far client binds its source to `FAR`, and a loopback
//! one connects from 127.0.0.1; nothing leaves the namespace, and the machine's own interfaces
//! play no part. Without the right to make a namespace (not root, or a sandbox that forbids
//! it) the test is skipped with the reason printed.
//!
//! ```ignore
//! #[test]
//! fn name() {
//!     if !netns::inside(module_path!(), "name") { return; }
//!     // the body, run in the namespace
//! }
//! ```

use std::net::{IpAddr, SocketAddr, TcpStream};
use std::process::Command;

/// The far peer's address, on the namespace's loopback device.
pub const FAR: &str = "10.200.0.1";
/// A second far address, for what is counted per address.
pub const FAR2: &str = "10.200.0.2";

/// Set in the child that runs a test's body in the namespace.
const INSIDE: &str = "GEARWHEEL_TEST_NETNS";

/// Is this the test's body's run in the namespace? Outside, runs the test `test` of the
/// module `module` (the caller's `module_path!()`) again in a new network namespace and
/// checks that it passed, or prints why it cannot: either way the caller returns.
pub fn inside(module: &str, test: &str) -> bool {
    if std::env::var_os(INSIDE).is_some() {
        return true;
    }
    // libtest names a test by its path below the crate root: `access::name`, where
    // module_path!() says `protocol::access`.
    let name = match module.split_once("::") {
        Some((_, below)) => format!("{below}::{test}"),
        None => test.to_string(),
    };
    let name = name.as_str();
    let setup =
        format!("ip link set lo up && ip addr add {FAR}/32 dev lo && ip addr add {FAR2}/32 dev lo");
    let probe = Command::new("unshare")
        .args(["-n", "sh", "-c", &setup])
        .output();
    match probe {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            eprintln!(
                "SKIP {name}: cannot make a network namespace with a far address (unshare -n: {}{})",
                o.status,
                String::from_utf8_lossy(&o.stderr).trim()
            );
            return false;
        }
        Err(e) => {
            eprintln!("SKIP {name}: cannot run unshare -n: {e}");
            return false;
        }
    }
    let exe = std::env::current_exe().expect("the test binary");
    let script = format!("{setup} && exec \"$0\" --exact \"$1\" --nocapture --test-threads=1");
    let out = Command::new("unshare")
        .args(["-n", "sh", "-c", &script])
        .arg(&exe)
        .arg(name)
        .env(INSIDE, "1")
        .output()
        .expect("unshare");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stdout}");
    eprint!("{stderr}");
    assert!(
        out.status.success(),
        "{name} failed in its network namespace"
    );
    assert!(
        stdout.contains("1 passed"),
        "{name} did not run in its network namespace"
    );
    false
}

/// A TCP connection to `to` from the source address `from` (any port).
pub fn stream_from(from: &str, to: SocketAddr) -> TcpStream {
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    let src: SocketAddr = format!("{from}:0").parse().unwrap();
    sock.bind(&src.into()).unwrap();
    sock.connect(&to.into()).unwrap();
    sock.into()
}

/// `port` on the far address, where a far client connects (a server on 0.0.0.0 answers).
pub fn far(port: u16) -> SocketAddr {
    SocketAddr::new(FAR.parse::<IpAddr>().unwrap(), port)
}

/// `port` on 127.0.0.1.
pub fn near(port: u16) -> SocketAddr {
    SocketAddr::new(IpAddr::from([127, 0, 0, 1]), port)
}
