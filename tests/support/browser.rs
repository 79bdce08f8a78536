//! A real browser for the page tests: Debian's Chromium, headless, driven
//! over WebDriver (fantoccini) through a ChromeDriver this harness starts on
//! a free port. Without `chromedriver` or `chromium` on the machine,
//! `Browser::start` prints why and returns `None`, and the test skips
//! (set `PAYGATE_REQUIRE_BROWSER=1` to make that a failure instead).

use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the `wait_*` helpers wait before failing the test.
pub const WAIT: Duration = Duration::from_secs(15);

/// How long ChromeDriver gets to answer its status check after starting.
const DRIVER_START: Duration = Duration::from_secs(20);

/// A phone's viewport (an iPhone X's CSS pixels): the narrowest the pages
/// must fit.
pub const PHONE: (u32, u32) = (375, 812);

/// A laptop's viewport.
pub const DESKTOP: (u32, u32) = (1280, 900);

/// Chromium's flags: headless, no sandbox (containers run as root), and
/// nothing that talks to the network on its own or slows a start.
const CHROMIUM_FLAGS: &[&str] = &[
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
];

/// One browser at a time in a test binary: each is a Chromium, and the
/// machines the tests run on have few cores.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// What to start a browser with.
#[derive(Clone, Debug)]
pub struct Options {
    /// Viewport width and height in CSS pixels.
    pub size: (u32, u32),
    /// The `Accept-Language` the browser sends, e.g. `en-US,en`.
    pub accept_language: Option<String>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            size: DESKTOP,
            accept_language: None,
        }
    }
}

/// A headless Chromium session and the ChromeDriver behind it; dropping it
/// ends both.
pub struct Browser {
    /// The WebDriver session, for anything the helpers below do not cover.
    pub client: Client,
    driver: Child,
    _profile: tempfile::TempDir,
    _turn: tokio::sync::MutexGuard<'static, ()>,
}

/// The first of `names` found in `PATH` (or the file `env` names).
fn find_program(env: &str, names: &[&str]) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(env) {
        return Some(PathBuf::from(path));
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .flat_map(|dir| names.iter().map(move |name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free local port")
}

/// Skips (returns `None`, saying why) unless the browser is required.
fn unavailable(why: &str) -> Option<Browser> {
    if std::env::var("PAYGATE_REQUIRE_BROWSER").is_ok_and(|v| v == "1") {
        panic!("browser test: {why} (PAYGATE_REQUIRE_BROWSER=1)");
    }
    eprintln!("SKIPPED browser test: {why}; install Debian's chromium and chromium-driver to run it");
    None
}

impl Browser {
    /// A phone-sized browser.
    pub async fn phone() -> Option<Browser> {
        Browser::start(Options {
            size: PHONE,
            ..Options::default()
        })
        .await
    }

    /// A desktop-sized browser.
    pub async fn desktop() -> Option<Browser> {
        Browser::start(Options::default()).await
    }

    /// Starts ChromeDriver on a free port and a headless Chromium session
    /// with a fresh profile; `None` (the test skips) when either is missing.
    pub async fn start(options: Options) -> Option<Browser> {
        let Some(driver_program) = find_program("CHROMEDRIVER", &["chromedriver"]) else {
            return unavailable("chromedriver is not installed");
        };
        let Some(chromium) = find_program("CHROMIUM", &["chromium", "chromium-browser", "google-chrome"]) else {
            return unavailable("chromium is not installed");
        };
        let turn = ONE_AT_A_TIME.lock().await;
        let port = free_port();
        let driver = spawn_driver(&driver_program, port);
        let base = format!("http://127.0.0.1:{port}");
        let mut driver = driver;
        if !driver_ready(&base).await {
            let _ = driver.kill();
            let _ = driver.wait();
            return unavailable("chromedriver did not start");
        }
        let profile = tempfile::tempdir().expect("a temporary profile dir");
        let capabilities = capabilities(&chromium, profile.path(), &options);
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = match ClientBuilder::new(connector)
            .capabilities(capabilities)
            .connect(&base)
            .await
        {
            Ok(client) => client,
            Err(error) => {
                kill_group(&mut driver);
                return unavailable(&format!("chromium did not start a session: {error}"));
            }
        };
        let browser = Browser {
            client,
            driver,
            _profile: profile,
            _turn: turn,
        };
        browser.resize(options.size).await;
        Some(browser)
    }

    /// Makes the viewport `width` x `height` CSS pixels: the window is
    /// sized, then grown by what its frame takes.
    pub async fn resize(&self, (width, height): (u32, u32)) {
        self.client
            .set_window_size(width, height)
            .await
            .expect("window resized");
        let inner = self.script("return [window.innerWidth, window.innerHeight];").await;
        let frame_width = width.saturating_sub(inner[0].as_u64().unwrap_or(width as u64) as u32);
        let frame_height = height.saturating_sub(inner[1].as_u64().unwrap_or(height as u64) as u32);
        if frame_width > 0 || frame_height > 0 {
            self.client
                .set_window_size(width + frame_width, height + frame_height)
                .await
                .expect("window resized");
        }
    }

    /// Opens `url` and waits for it to load.
    pub async fn goto(&self, url: &str) {
        self.client
            .goto(url)
            .await
            .unwrap_or_else(|e| panic!("open {url}: {e}"));
    }

    /// The page's current URL.
    pub async fn url(&self) -> String {
        self.client.current_url().await.expect("current url").to_string()
    }

    /// Runs `script` (a function body; `return` gives the value) in the page.
    pub async fn script(&self, script: &str) -> Value {
        self.client
            .execute(script, vec![])
            .await
            .unwrap_or_else(|e| panic!("script {script:?}: {e}"))
    }

    /// The first element matching `css`, waiting up to `WAIT` for it.
    pub async fn wait_for(&self, css: &str) -> Element {
        self.client
            .wait()
            .at_most(WAIT)
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no element {css} within {WAIT:?}: {e}"))
    }

    /// The first element matching `css` now, if any.
    pub async fn find(&self, css: &str) -> Option<Element> {
        self.client.find(Locator::Css(css)).await.ok()
    }

    /// Waits until the text of the element `css` contains `text`; returns it.
    pub async fn wait_for_text(&self, css: &str, text: &str) -> String {
        let mut seen = String::new();
        let found = self
            .poll(move || async move {
                let element = self.client.find(Locator::Css(css)).await.ok()?;
                let current = element.text().await.ok()?;
                current.contains(text).then_some(current)
            })
            .await;
        if let Some(current) = found {
            return current;
        }
        if let Some(element) = self.find(css).await {
            seen = element.text().await.unwrap_or_default();
        }
        panic!("{css} did not show {text:?} within {WAIT:?} (it shows {seen:?})");
    }

    /// Waits until `visible` is true of the element `css` being displayed.
    pub async fn wait_until_displayed(&self, css: &str, visible: bool) {
        let done = self
            .poll(move || async move {
                let element = self.client.find(Locator::Css(css)).await.ok()?;
                (element.is_displayed().await.ok()? == visible).then_some(())
            })
            .await;
        assert!(done.is_some(), "{css} displayed is not {visible} within {WAIT:?}");
    }

    /// Waits until the current URL starts with `prefix`; returns it.
    pub async fn wait_for_url(&self, prefix: &str) -> String {
        let found = self
            .poll(move || async move {
                let url = self.client.current_url().await.ok()?.to_string();
                url.starts_with(prefix).then_some(url)
            })
            .await;
        match found {
            Some(url) => url,
            None => panic!(
                "the browser did not reach {prefix} within {WAIT:?} (it is at {})",
                self.url().await
            ),
        }
    }

    /// Polls `check` every 100 ms until it gives a value or `WAIT` passes.
    pub async fn poll<T, F, Fut>(&self, check: F) -> Option<T>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(value) = check().await {
                return Some(value);
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The text of an open `alert`/`confirm`/`prompt` dialog, if one is open.
    pub async fn open_dialog(&self) -> Option<String> {
        self.client.get_alert_text().await.ok()
    }

    /// A PNG of the viewport.
    pub async fn screenshot(&self) -> Vec<u8> {
        self.client.screenshot().await.expect("screenshot taken")
    }

    /// Saves a PNG of the viewport to `path`, creating its folder.
    pub async fn save_screenshot(&self, path: &Path) {
        if let Some(folder) = path.parent() {
            std::fs::create_dir_all(folder).expect("screenshot folder");
        }
        std::fs::write(path, self.screenshot().await).expect("screenshot written");
    }

    /// Ends the session (Chromium exits) and then ChromeDriver.
    pub async fn close(mut self) {
        let _ = self.client.clone().close().await;
        kill_group(&mut self.driver);
    }
}

impl Drop for Browser {
    /// A test that panicked never reaches `close`: ChromeDriver's process
    /// group (it and the Chromium it started) is killed here.
    fn drop(&mut self) {
        kill_group(&mut self.driver);
    }
}

/// Starts ChromeDriver on `port` in a process group of its own, so the
/// browsers it starts can be ended with it.
fn spawn_driver(program: &Path, port: u16) -> Child {
    use std::os::unix::process::CommandExt;
    Command::new(program)
        .arg(format!("--port={port}"))
        .arg("--allowed-ips=127.0.0.1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("{} starts: {e}", program.display()))
}

/// Kills ChromeDriver's process group (its id is ChromeDriver's) and reaps it.
fn kill_group(driver: &mut Child) {
    if let Ok(Some(_)) = driver.try_wait() {
        return;
    }
    if let Ok(group) = i32::try_from(driver.id()) {
        // SAFETY: kill(2) on a process group this harness created.
        unsafe {
            libc::kill(-group, libc::SIGKILL);
        }
    }
    let _ = driver.kill();
    let _ = driver.wait();
}

/// Waits for ChromeDriver's `/status` to say it is ready.
async fn driver_ready(base: &str) -> bool {
    let client = reqwest::Client::new();
    let deadline = Instant::now() + DRIVER_START;
    while Instant::now() < deadline {
        if let Ok(response) = client.get(format!("{base}/status")).send().await {
            if let Ok(status) = response.json::<Value>().await {
                if status["value"]["ready"] == json!(true) {
                    return true;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// The session's capabilities: Chromium, its flags, a fresh profile.
fn capabilities(chromium: &Path, profile: &Path, options: &Options) -> serde_json::Map<String, Value> {
    let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|flag| flag.to_string()).collect();
    args.push(format!("--user-data-dir={}", profile.display()));
    args.push(format!("--window-size={},{}", options.size.0, options.size.1));
    let mut chrome_options = json!({
        "binary": chromium.display().to_string(),
        "args": args,
    });
    if let Some(languages) = &options.accept_language {
        chrome_options["prefs"] = json!({ "intl.accept_languages": languages });
        chrome_options["args"]
            .as_array_mut()
            .expect("args is an array")
            .push(json!(format!("--lang={}", languages.split(',').next().unwrap_or("en"))));
    }
    let capabilities = json!({
        "browserName": "chrome",
        "goog:chromeOptions": chrome_options,
    });
    match capabilities {
        Value::Object(map) => map,
        _ => unreachable!("capabilities are an object"),
    }
}
