//! Progress display shared by the verbs: an indicatif spinner or bar on a terminal, nothing when
//! output is redirected (indicatif hides itself), so logs and tests stay clean.

use indicatif::{ProgressBar, ProgressStyle};

/// A spinner with a message, ticking on its own.
pub fn spinner(msg: String) -> ProgressBar {
    let pb = ProgressBar::new_spinner().with_message(msg);
    pb.enable_steady_tick(std::time::Duration::from_millis(120));
    pb
}

/// A bar of `len` steps labelled `what`, with rate and time left.
pub fn bar(len: u64, what: &str) -> ProgressBar {
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template(
            "{msg} [{bar:40}] {human_pos}/{human_len} {per_sec} eta {eta}",
        )
        .expect("static template")
        .progress_chars("=> "),
    );
    pb.set_message(what.to_string());
    pb
}
