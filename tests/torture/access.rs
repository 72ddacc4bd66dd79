//! Access (issue 6): the sockets never exist with wider permissions than `socket_mode`, not
//! even for an instant, and a peer whose gid is not allowed is refused before its hello.
//! (`tests/daemon/control.rs` covers the uid refusal and the final mode.)
//!
//! The daemon runs with umask 0, so a socket bound at its final path would start out 0777.
//! An inotify watch on the socket directory sees every file appear: each is stat'ed at once
//! (no wider mode may ever be seen), and a socket created in place (`IN_CREATE`) whose mode
//! then changes (`IN_ATTRIB`) had a window, however short, even when no stat fell into it.
//! Sockets are bound in a private directory and renamed into place; that directory must be
//! created 0700 (not chmod'ed afterwards).

use crate::support::daemon;

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use daemon::TestDaemon;
use serde_json::json;

/// What the watcher saw, per name: the events in order, and every mode a stat found.
type Seen = BTreeMap<String, (Vec<&'static str>, Vec<u32>)>;

fn watch(dir: PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Seen> {
    // SAFETY: plain syscalls on an fd we own; the buffer outlives every read.
    let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
    assert!(fd >= 0);
    let c = CString::new(dir.as_os_str().as_bytes()).unwrap();
    let mask = libc::IN_CREATE | libc::IN_MOVED_TO | libc::IN_ATTRIB;
    assert!(unsafe { libc::inotify_add_watch(fd, c.as_ptr(), mask) } >= 0);
    std::thread::spawn(move || {
        let mut seen = Seen::new();
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                if stop.load(SeqCst) {
                    break;
                }
                std::thread::yield_now();
                continue;
            }
            let mut at = 0usize;
            while at + 16 <= n as usize {
                let mask = u32::from_ne_bytes(buf[at + 4..at + 8].try_into().unwrap());
                let len = u32::from_ne_bytes(buf[at + 12..at + 16].try_into().unwrap()) as usize;
                let raw = &buf[at + 16..at + 16 + len];
                let name = String::from_utf8_lossy(
                    &raw[..raw.iter().position(|&b| b == 0).unwrap_or(len)],
                )
                .into_owned();
                at += 16 + len;
                let kind = if mask & libc::IN_CREATE != 0 {
                    "create"
                } else if mask & libc::IN_MOVED_TO != 0 {
                    "moved_to"
                } else {
                    "attrib"
                };
                let entry = seen.entry(name.clone()).or_default();
                entry.0.push(kind);
                if let Ok(m) = std::fs::symlink_metadata(dir.join(&name)) {
                    entry.1.push(m.permissions().mode() & 0o7777);
                }
            }
        }
        unsafe { libc::close(fd) };
        seen
    })
}

#[test]
fn sockets_never_exist_with_a_wider_mode_than_configured() {
    for mode in [0o600u32, 0o660] {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        std::fs::create_dir(&run).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let watcher = watch(run.clone(), stop.clone());
        let cfg = json!({
            "data_root": dir.path().join("data"),
            "ingest_socket": run.join("ingest.sock"),
            "control_socket": run.join("control.sock"),
            "min_free_bytes": 0,
            "socket_mode": format!("{mode:04o}"),
        });
        // Three starts: the first binds fresh paths, the later ones replace stale sockets
        // left by a kill -9.
        let config = dir.path().join("roverlog.json");
        std::fs::write(&config, serde_json::to_vec_pretty(&cfg).unwrap()).unwrap();
        let mut d = TestDaemon {
            dir,
            config,
            child: None,
        };
        spawn_with_umask0(&mut d);
        for _ in 0..2 {
            d.kill9();
            spawn_with_umask0(&mut d);
        }
        assert!(d.stop().success());
        std::thread::sleep(Duration::from_millis(100));
        stop.store(true, SeqCst);
        let seen = watcher.join().unwrap();
        for sock in ["ingest.sock", "control.sock"] {
            let (events, modes) = seen
                .get(sock)
                .unwrap_or_else(|| panic!("the watcher never saw {sock}: {seen:?}"));
            assert!(
                events.contains(&"moved_to") || events.contains(&"create"),
                "{seen:?}"
            );
            for m in modes {
                assert_eq!(
                    m & 0o777 & !mode,
                    0,
                    "{sock} seen with mode {m:o}, configured {mode:o}: {seen:?}"
                );
            }
            if events.contains(&"create") {
                assert!(
                    !events.contains(&"attrib"),
                    "{sock} was created in place and its mode changed afterwards: a window: {seen:?}"
                );
            }
        }
        let mut bind_dirs = 0;
        for (name, (events, modes)) in &seen {
            if name.ends_with(".bind") {
                bind_dirs += 1;
                assert!(
                    !events.contains(&"attrib"),
                    "{name}: chmod after mkdir: {seen:?}"
                );
                for m in modes {
                    assert_eq!(m & 0o777, 0o700, "{name}: {seen:?}");
                }
            }
        }
        assert!(bind_dirs > 0, "{seen:?}");
    }
}

/// (Re)starts the daemon with umask 0, restored once it is up. (umask is process-wide: files
/// the other test of this binary creates meanwhile may get wider modes; it checks none.)
fn spawn_with_umask0(d: &mut TestDaemon) {
    // SAFETY: umask only changes the mode of files created afterwards.
    let old = unsafe { libc::umask(0) };
    d.spawn();
    unsafe { libc::umask(old) };
}

#[test]
fn a_peer_whose_gid_is_not_allowed_is_refused_before_its_hello() {
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    // Neither our uid nor our gid listed: refused without sending a byte.
    for cfg in [
        json!({"allow_gids": [gid + 12345]}),
        json!({"allow_uids": [uid + 12345], "allow_gids": [gid + 12345]}),
    ] {
        let d = TestDaemon::start(cfg.clone());
        let mut s = std::os::unix::net::UnixStream::connect(d.ingest_path()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut reply = String::new();
        use std::io::Read;
        s.read_to_string(&mut reply).unwrap();
        assert!(
            reply.contains("not in allow_uids/allow_gids"),
            "{cfg}: {reply}"
        );
        assert!(reply.contains(&format!("gid {gid}")), "{reply}");
    }
    // Our gid listed: allowed.
    let d = TestDaemon::start(json!({"allow_gids": [gid]}));
    let (_c, r) = d.connect(&daemon::raw_hello("ok", 1));
    assert_eq!(r["ok"], true, "{r}");
}

#[test]
fn a_socket_group_the_daemon_user_is_not_in_is_a_config_error_naming_it() {
    use std::os::unix::process::CommandExt;
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "this test runs the daemon as nobody and must start as root (CI runs as root)"
    );
    // As under the unit (User=roverlog, no capabilities): the daemon may not give its
    // sockets a group it is not a member of.
    let d = TestDaemon::create(json!({"socket_group": "0"}));
    std::fs::set_permissions(d.dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::set_permissions(&d.config, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut cmd = d.command();
    cmd.uid(65534).gid(65534);
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("socket_group"), "{err}");
    assert!(!d.ingest_path().exists(), "{err}");
}
