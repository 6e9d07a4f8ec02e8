//! `isim report` in a real browser: headless Chromium (Debian's `chromium`, installed by
//! `.ci/run`) loads the HTML reports of a run (with LIME and ParaShares results), a sweep and a
//! PCA directory, and the test checks what the browser made of them:
//! * `--dump-dom`: the page's charts are inline `<svg>` elements (as many as the directory has
//!   charts), the analyses' tables are there under their titles, and no error text appears;
//! * `--screenshot`: the rendered page is far from blank — its PNG is several times larger than
//!   the screenshot of an empty page at the same size (the control that lets this check fail);
//! * the file itself fetches nothing: no `src`/`href` to a network address.
//!
//! Under `CI=true` a missing `chromium` fails the test; elsewhere it is skipped with a message.

use std::path::Path;
use std::process::Command;

fn isim(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_isim"))
        .args(args)
        .output()
        .expect("run isim");
    assert!(
        o.status.success(),
        "isim {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn chromium_present() -> bool {
    let ok = Command::new("sh")
        .args(["-c", "command -v chromium"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            !std::env::var("CI").is_ok_and(|v| v == "true"),
            "chromium is required under CI (.ci/run installs Debian's chromium)"
        );
        eprintln!("SKIPPED: the report browser test needs chromium (apt-get install chromium)");
    }
    ok
}

/// Runs headless Chromium on `page` with `extra` arguments; returns its standard output.
fn chromium(profile: &Path, page: &Path, extra: &[&str]) -> String {
    let o = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    assert!(
        o.status.success(),
        "chromium on {}: {}",
        page.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn screenshot_bytes(profile: &Path, page: &Path, png: &Path) -> u64 {
    let shot = format!("--screenshot={}", png.display());
    chromium(profile, page, &[&shot, "--window-size=1200,1600"]);
    let bytes = std::fs::read(png).expect("screenshot written");
    assert_eq!(
        &bytes[..8],
        b"\x89PNG\r\n\x1a\n",
        "{} is not a PNG",
        png.display()
    );
    bytes.len() as u64
}

#[test]
fn reports_render_their_charts_and_tables_in_headless_chromium() {
    if !chromium_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = |p: &str| dir.path().join(p);
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let profile = d("chromium-profile");

    let run = d("run");
    isim(&["run", "-w", "lu-owner", "-t", "4", "--out", &s(&run)]);
    isim(&["lime", &s(&run)]);
    isim(&["parashare", &s(&run)]);
    let sw = d("sw");
    isim(&[
        "sweep",
        "-w",
        "lu-owner",
        "--cores",
        "1,2,4",
        "-s",
        "8",
        "--out",
        &s(&sw),
    ]);
    let pca = d("pca");
    isim(&["pca", &s(&sw), "--out", &s(&pca)]);

    let blank = d("blank.html");
    std::fs::write(&blank, "<!doctype html><html><body></body></html>").unwrap();
    let blank_png = screenshot_bytes(&profile, &blank, &d("blank.png"));

    // (directory, at least this many charts, titles that must appear)
    let lime: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("lime.json")).unwrap()).unwrap();
    let para: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("parashare.json")).unwrap())
            .unwrap();
    let title =
        |v: &serde_json::Value| v["report_tables"][0]["title"].as_str().unwrap().to_string();
    let cases: [(&Path, usize, Vec<String>); 3] = [
        (&run, 3, vec![title(&lime), title(&para), "lu-owner".into()]),
        (&sw, 3, vec!["Sweep: lu-owner".into(), "speedup".into()]),
        (&pca, 2, vec!["variance".into()]),
    ];
    for (src, charts, titles) in cases {
        let html = d(&format!(
            "{}.html",
            src.file_name().unwrap().to_string_lossy()
        ));
        isim(&["report", &s(src), "-o", &s(&html)]);
        let text = std::fs::read_to_string(&html).unwrap();
        for bad in [
            "src=\"http",
            "href=\"http",
            "url(http",
            "src='http",
            "href='http",
        ] {
            assert!(
                !text.contains(bad),
                "{}: fetches from the network ({bad})",
                html.display()
            );
        }
        let dom = chromium(&profile, &html, &["--dump-dom"]);
        let svgs = dom.matches("<svg").count();
        assert!(
            svgs >= charts,
            "{}: {svgs} <svg> elements in the rendered page, expected at least {charts}",
            html.display()
        );
        assert!(
            dom.contains("<table"),
            "{}: no table rendered",
            html.display()
        );
        for t in &titles {
            let esc = t
                .replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;");
            assert!(
                dom.contains(t.as_str()) || dom.contains(&esc),
                "{}: `{t}` is not in the rendered page",
                html.display()
            );
        }
        let lower = dom.to_lowercase();
        for word in ["error", "panicked", "not found"] {
            assert!(
                !lower.contains(word),
                "{}: the page says `{word}`",
                html.display()
            );
        }
        let png = screenshot_bytes(&profile, &html, &html.with_extension("png"));
        assert!(
            png > 4 * blank_png,
            "{}: screenshot of {png} bytes, barely more than a blank page's {blank_png}",
            html.display()
        );
    }
}
