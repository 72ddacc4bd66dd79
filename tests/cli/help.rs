//! `--help` of the subcommands with their own exit codes: `roverlog --help` sends the reader
//! to `daemon --help` and `ctl --help`, which must then list them.

use crate::support::common::roverlog;

fn help(args: &[&str]) -> String {
    let r = roverlog(args);
    assert!(r.ok(), "roverlog {args:?}: {}", r.text());
    String::from_utf8(r.stdout).unwrap()
}

#[test]
fn daemon_and_ctl_help_list_their_exit_codes() {
    let top = help(&["--help"]);
    assert!(top.contains("roverlog daemon --help"), "{top}");
    let daemon = help(&["daemon", "--help"]);
    for code in [
        "Exit codes: 0 stopped cleanly",
        "1 runtime failure",
        "2 bad usage or invalid config",
        "3 the sockets or data_root are in use",
    ] {
        assert!(
            daemon.contains(code),
            "daemon --help lacks '{code}':\n{daemon}"
        );
    }
    let ctl = help(&["ctl", "--help"]);
    for code in [
        "Exit codes: 0 the daemon answered \"ok\"",
        "1 the daemon answered with an error",
        "2 bad usage",
        "3 cannot reach the daemon",
    ] {
        assert!(ctl.contains(code), "ctl --help lacks '{code}':\n{ctl}");
    }
}
