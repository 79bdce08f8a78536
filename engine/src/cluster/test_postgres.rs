//! A private PostgreSQL server for tests, from the machine's own install
//! (Debian's `postgresql` package): `initdb` into a fresh directory, then
//! `pg_ctl` on a free loopback port, as a user other than root when the
//! tests run as root (PostgreSQL refuses root). Stopped and removed on drop.
//!
//! Where PostgreSQL is not installed, `start` returns `None` with a note and
//! the test skips, unless `CI` is set: CI installs it, so there its absence
//! fails the test instead of passing unseen.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// A running test server.
pub struct TestPostgres {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
    /// Who runs the server's programs, when not this process's user.
    run_as: Option<String>,
}

static SERVERS: AtomicU32 = AtomicU32::new(0);

/// The directory holding `initdb` and `pg_ctl`: on the PATH, else the
/// newest of Debian's `/usr/lib/postgresql/<version>/bin`.
fn binaries() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if dir.join("initdb").is_file() && dir.join("pg_ctl").is_file() {
                return Some(dir);
            }
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| output.stdout.trim_ascii() == b"0")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free loopback port")
}

impl TestPostgres {
    /// Starts a fresh server, or `None` (outside CI) where PostgreSQL is not
    /// installed.
    pub fn start() -> Option<TestPostgres> {
        let Some(bin) = binaries() else {
            if std::env::var_os("CI").is_some() {
                panic!("PostgreSQL is not installed: .ci/run installs Debian's postgresql package");
            }
            eprintln!("note: PostgreSQL is not installed (Debian package postgresql); this cluster test skips");
            return None;
        };
        let run_as = is_root().then(|| {
            let has_postgres = Command::new("id")
                .arg("postgres")
                .output()
                .is_ok_and(|output| output.status.success());
            if has_postgres { "postgres" } else { "nobody" }.to_string()
        });
        let dir = std::env::temp_dir().join(format!(
            "paygate-pg-{}-{}",
            std::process::id(),
            SERVERS.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("test PostgreSQL dir");
        let server = TestPostgres {
            dir,
            bin,
            port: free_port(),
            run_as,
        };
        if let Some(user) = &server.run_as {
            let status = Command::new("chown")
                .arg(format!("{user}:"))
                .arg(&server.dir)
                .status()
                .expect("chown runs");
            assert!(status.success(), "could not give {} to {user}", server.dir.display());
        }
        let data = server.data_dir();
        server.run(
            "initdb",
            &[
                "-D",
                path_str(&data),
                "-A",
                "trust",
                "-U",
                "paygate",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        );
        server.start_again();
        Some(server)
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// `program` of the install, run as `run_as` when set.
    fn command(&self, program: &str) -> Command {
        let program = self.bin.join(program);
        match &self.run_as {
            Some(user) => {
                let mut command = Command::new("runuser");
                command.args(["-u", user, "--"]).arg(&program);
                command
            }
            None => Command::new(&program),
        }
    }

    fn run(&self, program: &str, args: &[&str]) {
        let output = self
            .command(program)
            .args(args)
            .output()
            .expect("PostgreSQL's programs run");
        assert!(
            output.status.success(),
            "{program} {args:?} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// The URL a node connects with.
    pub fn url(&self) -> String {
        format!("postgres://paygate@127.0.0.1:{}/postgres", self.port)
    }

    /// Starts the server (again, after `stop`), on the same port and data.
    pub fn start_again(&self) {
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {} -c max_connections=200",
            self.port,
            path_str(&self.dir)
        );
        let data = self.data_dir();
        let log = self.dir.join("server.log");
        self.run(
            "pg_ctl",
            &[
                "-D",
                path_str(&data),
                "-o",
                &options,
                "-l",
                path_str(&log),
                "-w",
                "start",
            ],
        );
    }

    /// Stops the server at once (connections are cut, the data stays).
    pub fn stop(&self) {
        let data = self.data_dir();
        self.run("pg_ctl", &["-D", path_str(&data), "-m", "immediate", "-w", "stop"]);
    }
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("test paths are UTF-8")
}

impl Drop for TestPostgres {
    fn drop(&mut self) {
        let data = self.data_dir();
        let _ = self
            .command("pg_ctl")
            .args(["-D", path_str(&data), "-m", "immediate", "-w", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
