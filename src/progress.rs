//! Progress of the long verbs (publishing a file, an offline replay,
//! distilling the model, the tools' evaluation and benchmarks), drawn on
//! stderr for a person at a terminal and not at all when stderr is piped or
//! redirected, so that scripts and logs get only the result.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// The bar or spinner on screen, if any: lines printed meanwhile
/// ([`crate::print_line`]) are written with it lifted, not through it.
static ON_SCREEN: Mutex<Option<ProgressBar>> = Mutex::new(None);

fn on_screen(bar: ProgressBar) -> ProgressBar {
    *ON_SCREEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(bar.clone());
    bar
}

/// Runs `write` with the progress on screen lifted, so that a line printed
/// during a long verb does not tear its bar.
pub fn suspended<R>(write: impl FnOnce() -> R) -> R {
    let bar = ON_SCREEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
    match bar {
        Some(bar) if !bar.is_finished() => bar.suspend(write),
        _ => write(),
    }
}

/// Whether progress is drawn: stderr is a terminal.
pub fn shown() -> bool {
    std::io::stderr().is_terminal()
}

/// A bar of `length` steps (events, batches…), with `message` beside it.
pub fn bar(length: u64, message: &str) -> ProgressBar {
    if !shown() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(length).with_message(message.to_string());
    let style = ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ({elapsed}, {eta} left)")
        .expect("the template is valid")
        .progress_chars("=> ");
    bar.set_style(style);
    on_screen(bar)
}

/// A spinner for work of unknown length; [`ProgressBar::set_message`] says
/// which step it is at.
pub fn spinner(message: &str) -> ProgressBar {
    if !shown() {
        return ProgressBar::hidden();
    }
    let spinner = ProgressBar::new_spinner().with_message(message.to_string());
    spinner.set_style(ProgressStyle::with_template("{spinner} {msg} ({elapsed})").expect("the template is valid"));
    spinner.enable_steady_tick(Duration::from_millis(120));
    on_screen(spinner)
}
