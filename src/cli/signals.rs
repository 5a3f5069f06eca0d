//! SIGINT (Ctrl-C) and SIGTERM (what CI cancellation, `timeout` and
//! `docker stop` send) stop every command the same way, at any moment. A
//! run listening for them ([`requested`]) stops after its finished trials
//! are written and says how to `--resume`; anywhere else (start-up:
//! loading suites, starting MCP servers; or a second signal) the process
//! ends at once with 128 + the signal's number, and its children with it
//! (each is killed with toolgauge: [`crate::child`]).

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use tokio::sync::Notify;

/// The signal asked for, 0 while none.
static RECEIVED: AtomicI32 = AtomicI32::new(0);
/// A run is listening: it stops on its own.
static LISTENING: AtomicBool = AtomicBool::new(false);
static STOP: Notify = Notify::const_new();
/// What the command is doing, for the message of a stop at once.
static DOING: std::sync::Mutex<&'static str> =
    std::sync::Mutex::new("during start-up; nothing was run");

/// Say what the command is doing now, for the message a signal prints
/// when it ends the process at once ("SIGTERM: stopped while ...").
pub fn doing(what: &'static str) {
    *DOING.lock().unwrap_or_else(|e| e.into_inner()) = what;
}

/// Watch for SIGINT and SIGTERM for the rest of the process, on a thread
/// of its own; returns once the handlers are in place, so that a signal
/// that comes right after is never met by the default action. Without
/// signal support the process keeps the default.
pub fn install() {
    let (ready, installed) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("toolgauge-signals".into())
        .spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .build()
            else {
                let _ = ready.send(());
                return;
            };
            runtime.block_on(watch(ready));
        });
    if spawned.is_ok() {
        let _ = installed.recv();
    }
}

async fn watch(ready: std::sync::mpsc::Sender<()>) {
    use tokio::signal::unix::{SignalKind, signal};
    let handlers = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    );
    let _ = ready.send(());
    let (Ok(mut interrupt), Ok(mut terminate)) = handlers else {
        return;
    };
    loop {
        let number = tokio::select! {
            _ = interrupt.recv() => libc::SIGINT,
            _ = terminate.recv() => libc::SIGTERM,
        };
        let first = RECEIVED
            .compare_exchange(0, number, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
        if first && LISTENING.load(Ordering::SeqCst) {
            STOP.notify_waiters();
            continue;
        }
        let doing = *DOING.lock().unwrap_or_else(|e| e.into_inner());
        if first {
            eprintln!("{}: stopped {doing}", name(number));
        } else {
            eprintln!("{}: stopped again; stopping at once", name(number));
        }
        // Ending at once drops nothing: the groups this process owns are
        // ended here, helpers of MCP servers and shell calls included.
        crate::child::kill_every_group();
        std::process::exit(128 + number);
    }
}

/// Completes once SIGINT or SIGTERM arrives (at once if one already did);
/// while it is alive, the caller stops on its own instead of the process
/// ending at once.
pub async fn requested() {
    let stop = STOP.notified();
    tokio::pin!(stop);
    stop.as_mut().enable();
    let _listening = Listening::start();
    if RECEIVED.load(Ordering::SeqCst) == 0 {
        stop.await;
    }
}

/// A caller that checks for the stop itself ([`received`]) between
/// pieces of its work, until the value it gets is dropped: a signal then
/// ends the process no more, it stops the work.
pub fn listen() -> Listening {
    Listening::start()
}

/// A caller listening for the stop, until dropped.
pub struct Listening;

impl Listening {
    fn start() -> Listening {
        LISTENING.store(true, Ordering::SeqCst);
        Listening
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        LISTENING.store(false, Ordering::SeqCst);
    }
}

/// The signal a stop was asked with, if any: `(name, exit code)`.
pub fn received() -> Option<(&'static str, u8)> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        number => Some((name(number), (128 + number) as u8)),
    }
}

fn name(number: i32) -> &'static str {
    if number == libc::SIGTERM {
        "SIGTERM"
    } else {
        "SIGINT"
    }
}
