//! Progress display shared by the verbs: an indicatif spinner on a terminal, nothing when
//! output is redirected (indicatif hides itself), so logs and tests stay clean.

use indicatif::ProgressBar;

/// A spinner with a message, ticking on its own.
pub fn spinner(msg: String) -> ProgressBar {
    let pb = ProgressBar::new_spinner().with_message(msg);
    pb.enable_steady_tick(std::time::Duration::from_millis(120));
    pb
}
