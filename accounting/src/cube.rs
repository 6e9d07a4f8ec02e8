//! CUBE4 export of an aggregated profile, so the Cube tools (and readers such as `pycubexr`)
//! open isim's results. A `.cubex` file is a POSIX ustar archive holding `anchor.xml` and, per
//! metric `<id>`, `<id>.index` and `<id>.data`; the data members are zlib-compressed as CUBE's
//! own writer (and so Score-P) stores them, unless [`Compression::None`] is asked for.
//!
//! **Layout written here.**
//! * Metrics: every [`METRIC_DEFS`] entry in index order (ids 0..28:
//!   `cycles`, `work`, `sync`, the 18 cycle-stack components, `instructions`, `visits`,
//!   `l1-misses`..`l3-misses`, `min-visit`, `max-visit`), flat (no metric hierarchy, so no value
//!   is counted twice when a viewer sums a metric tree), all `EXCLUSIVE` along the call tree;
//!   cycles are `DOUBLE`, counts `UINT64`, the per-visit extremes `MINDOUBLE` and `MAXDOUBLE`
//!   (Score-P's minimum and maximum time of a single visit). For SET every one of them is `TAU_ATOMIC` instead — the tuple (n: u32, min, max,
//!   sum, sum of squares: f64), the paper's SET element. A last metric `threads` (`UINT64`)
//!   holds, at the root call path only, how many threads each location aggregates.
//! * Program: one region per profile region (the artificial root `threads`, functions with
//!   their file and line range, blocks), and one cnode per call path, numbered in depth-first
//!   pre-order (children in profile node order) under a single root cnode.
//! * System: one machine, one node, one process (location group) and one location of type
//!   `thread` per aggregated location (each thread for `none`; `sum`; `set`; KEY's initial,
//!   slowest, fastest and rest; one per CALLTREE group), numbered in that order.
//! * Index files: `CUBEX.INDEX`, i32 1 (byte order), i16 version 0, u8 type 1 (sparse), i32 N,
//!   N × i32 cnode ids: the cnodes with a non-zero value at some location (at least the root).
//!   Data files: `CUBEX.DATA`, then for each listed cnode one value per location. Little-endian.
//!   Compressed ([`Compression::Zlib`]): `ZCUBEX.DATA`, an i64 count of chunks, per chunk three
//!   i64 (its offset in the uncompressed values, its offset in the file, its compressed size),
//!   then the chunks, each a zlib stream of up to [`CHUNK`] bytes of the values above.
//!
//! The archive is written in memory and deterministically (mtime 0, fixed owner), so the same
//! profile gives the same bytes.

use std::fmt::Write as _;

use crate::aggregate::{Aggregated, Data};
use crate::profile::{Combine, METRIC_DEFS, METRICS, Profile, RegionKind};

/// Metric id of the aggregated-thread count.
pub const THREADS_METRIC: usize = METRICS;

/// Uncompressed bytes per zlib chunk of a compressed data member.
pub const CHUNK: usize = 1 << 20;

/// How the `.data` members are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// zlib chunks behind `ZCUBEX.DATA`, as CUBE writes them (the default).
    Zlib,
    /// The values as they are, behind `CUBEX.DATA`.
    None,
}

/// `data` (a `CUBEX.DATA` member) compressed: the same values behind `ZCUBEX.DATA`.
fn compress(data: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let values = &data[b"CUBEX.DATA".len()..];
    let chunks: Vec<Vec<u8>> = values
        .chunks(CHUNK)
        .map(|c| {
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            z.write_all(c).expect("writing into memory");
            z.finish().expect("writing into memory")
        })
        .collect();
    let mut out = b"ZCUBEX.DATA".to_vec();
    out.extend_from_slice(&(chunks.len() as i64).to_le_bytes());
    let mut at = out.len() + 24 * chunks.len();
    for (i, z) in chunks.iter().enumerate() {
        for x in [(i * CHUNK) as i64, at as i64, z.len() as i64] {
            out.extend_from_slice(&x.to_le_bytes());
        }
        at += z.len();
    }
    for z in &chunks {
        out.extend_from_slice(z);
    }
    out
}

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\t' && c != '\n' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// The cnode id of every profile node (depth-first pre-order) and the nodes in that order.
pub fn cnode_order(p: &Profile) -> (Vec<u32>, Vec<u32>) {
    let order: Vec<u32> = p.preorder().into_iter().map(|(n, _)| n).collect();
    let mut id = vec![0u32; p.nodes.len()];
    for (i, &n) in order.iter().enumerate() {
        id[n as usize] = i as u32;
    }
    (id, order)
}

fn anchor(p: &Profile, a: &Aggregated, workload: &str) -> String {
    let mut x = String::new();
    let set = matches!(a.data, Data::Set(_));
    let _ = writeln!(x, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(x, r#"<cube version="4.4">"#);
    let _ = writeln!(
        x,
        r#"  <attr key="Creator" value="isim {}"/>"#,
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(
        x,
        r#"  <attr key="isim::workload" value="{}"/>"#,
        esc(workload)
    );
    let _ = writeln!(
        x,
        r#"  <attr key="isim::aggregation" value="{}"/>"#,
        a.strategy
    );
    let _ = writeln!(
        x,
        r#"  <attr key="isim::threads" value="{}"/>"#,
        a.thread_count
    );
    x.push_str("  <metrics>\n");
    for (id, m) in METRIC_DEFS.iter().enumerate() {
        let dtype = if set {
            "TAU_ATOMIC"
        } else if m.integer {
            "UINT64"
        } else {
            match m.combine {
                Combine::Sum => "DOUBLE",
                Combine::Min => "MINDOUBLE",
                Combine::Max => "MAXDOUBLE",
            }
        };
        let descr = if set {
            format!(
                "{} (SET: threads visiting, min, max, sum, sum of squares over threads; min and max include non-visiting threads as 0)",
                m.description
            )
        } else {
            m.description.to_string()
        };
        let _ = writeln!(
            x,
            "    <metric id=\"{id}\" type=\"EXCLUSIVE\">\n      <disp_name>{}</disp_name>\n      <uniq_name>{}</uniq_name>\n      <dtype>{dtype}</dtype>\n      <uom>{}</uom>\n      <url></url>\n      <descr>{}</descr>\n    </metric>",
            esc(m.name),
            esc(m.name),
            esc(m.unit),
            esc(&descr)
        );
    }
    let _ = writeln!(
        x,
        "    <metric id=\"{THREADS_METRIC}\" type=\"EXCLUSIVE\">\n      <disp_name>threads</disp_name>\n      <uniq_name>threads</uniq_name>\n      <dtype>UINT64</dtype>\n      <uom>threads</uom>\n      <url></url>\n      <descr>threads aggregated into each location (at the root call path)</descr>\n    </metric>"
    );
    x.push_str("  </metrics>\n  <program>\n");
    for (id, r) in p.regions.iter().enumerate() {
        let (paradigm, role) = match r.kind {
            RegionKind::Root => ("user", "artificial"),
            RegionKind::Function => ("compiler", "function"),
            RegionKind::Block => ("user", "code"),
            // Score-P's pthread adapter: a barrier is a barrier, the rest wrapped functions.
            RegionKind::Sync if r.name == "barrier" => ("pthread", "barrier"),
            RegionKind::Sync => ("pthread", "wrapper"),
        };
        let line = |l: u32| if l == 0 { -1 } else { l as i64 };
        let _ = writeln!(
            x,
            "    <region id=\"{id}\" mod=\"{}\" begin=\"{}\" end=\"{}\">\n      <name>{}</name>\n      <mangled_name>{}</mangled_name>\n      <paradigm>{paradigm}</paradigm>\n      <role>{role}</role>\n      <url></url>\n      <descr></descr>\n    </region>",
            esc(&r.file),
            line(r.lines.0),
            line(r.lines.1),
            esc(&r.name),
            esc(&r.name)
        );
    }
    // Cnodes, nested, in pre-order.
    let (id, _) = cnode_order(p);
    let children = p.children();
    fn cnode(x: &mut String, p: &Profile, children: &[Vec<u32>], id: &[u32], n: u32, depth: usize) {
        let pad = "  ".repeat(depth + 2);
        let _ = write!(
            x,
            "{pad}<cnode id=\"{}\" calleeId=\"{}\">",
            id[n as usize], p.nodes[n as usize].region
        );
        if children[n as usize].is_empty() {
            x.push_str("</cnode>\n");
            return;
        }
        x.push('\n');
        for &c in &children[n as usize] {
            cnode(x, p, children, id, c, depth + 1);
        }
        let _ = writeln!(x, "{pad}</cnode>");
    }
    for (n, node) in p.nodes.iter().enumerate() {
        if node.parent.is_none() {
            cnode(&mut x, p, &children, &id, n as u32, 0);
        }
    }
    x.push_str("  </program>\n  <system>\n");
    x.push_str(
        "    <systemtreenode Id=\"0\">\n      <name>machine</name>\n      <class>machine</class>\n",
    );
    x.push_str("      <systemtreenode Id=\"1\">\n        <name>node 0</name>\n        <class>node</class>\n");
    let _ = writeln!(
        x,
        "        <locationgroup Id=\"0\">\n          <name>{}</name>\n          <rank>0</rank>\n          <type>process</type>",
        esc(workload)
    );
    for (i, l) in a.locations.iter().enumerate() {
        let _ = writeln!(
            x,
            "          <location Id=\"{i}\">\n            <name>{}</name>\n            <rank>{i}</rank>\n            <type>thread</type>\n          </location>",
            esc(&l.name)
        );
    }
    x.push_str("        </locationgroup>\n      </systemtreenode>\n    </systemtreenode>\n  </system>\n</cube>\n");
    x
}

fn index_file(cnodes: &[u32]) -> Vec<u8> {
    let mut b = Vec::with_capacity(22 + 4 * cnodes.len());
    b.extend_from_slice(b"CUBEX.INDEX");
    b.extend_from_slice(&1i32.to_le_bytes());
    b.extend_from_slice(&0i16.to_le_bytes());
    b.push(1);
    b.extend_from_slice(&(cnodes.len() as i32).to_le_bytes());
    for &c in cnodes {
        b.extend_from_slice(&(c as i32).to_le_bytes());
    }
    b
}

/// The `.index` and `.data` contents of metric `m`.
fn metric_files(a: &Aggregated, m: usize, order: &[u32]) -> (Vec<u8>, Vec<u8>) {
    let mut rows: Vec<u32> = Vec::new();
    let mut data = b"CUBEX.DATA".to_vec();
    let nloc = a.locations.len();
    if m == THREADS_METRIC {
        rows.push(0);
        for l in &a.locations {
            data.extend_from_slice(&(l.threads.len() as u64).to_le_bytes());
        }
        return (index_file(&rows), data);
    }
    let integer = METRIC_DEFS[m].integer;
    // The per-visit extremes list every cnode: readers (pycubexr 2.1.1) cannot make the zero row
    // of an unlisted cnode for MINDOUBLE/MAXDOUBLE values.
    let dense = METRIC_DEFS[m].combine != Combine::Sum;
    for (cid, &n) in order.iter().enumerate() {
        let n = n as usize;
        let nonzero = dense
            || match &a.data {
                Data::Locations(v) => v.iter().any(|l| l[n][m] != 0.0),
                Data::Set(s) => {
                    let st = &s[n];
                    st.n > 0 || st.sum[m] != 0.0 || st.min[m] != 0.0 || st.max[m] != 0.0
                }
            };
        if !nonzero {
            continue;
        }
        rows.push(cid as u32);
        match &a.data {
            Data::Locations(v) => {
                for l in v.iter().take(nloc) {
                    let x = l[n][m];
                    if integer {
                        data.extend_from_slice(&(x.max(0.0).round() as u64).to_le_bytes());
                    } else {
                        data.extend_from_slice(&x.to_le_bytes());
                    }
                }
            }
            Data::Set(s) => {
                let st = &s[n];
                data.extend_from_slice(&st.n.to_le_bytes());
                for x in [st.min[m], st.max[m], st.sum[m], st.sum2[m]] {
                    data.extend_from_slice(&x.to_le_bytes());
                }
            }
        }
    }
    if rows.is_empty() {
        // Readers expect at least one row: the root, all zeros.
        rows.push(0);
        match &a.data {
            Data::Locations(_) => data.extend(std::iter::repeat_n(0u8, 8 * nloc)),
            Data::Set(_) => data.extend(std::iter::repeat_n(0u8, 36)),
        }
    }
    (index_file(&rows), data)
}

/// Bytes of the metric values alone: the `.data` members of [`cubex`] (headers included,
/// archive framing and `anchor.xml` excluded), stored as `compression` says.
pub fn data_bytes(p: &Profile, a: &Aggregated, compression: Compression) -> usize {
    let (_, order) = cnode_order(p);
    (0..=THREADS_METRIC)
        .map(|m| {
            let data = metric_files(a, m, &order).1;
            match compression {
                Compression::Zlib => compress(&data).len(),
                Compression::None => data.len(),
            }
        })
        .sum()
}

/// Appends one ustar member.
fn tar_member(out: &mut Vec<u8>, name: &str, body: &[u8]) -> std::io::Result<()> {
    if name.len() > 99 || body.len() as u64 >= 8 << 30 {
        return Err(std::io::Error::other(format!(
            "CUBE archive member {name} is too large for a ustar header"
        )));
    }
    let mut h = [0u8; 512];
    let mut put = |off: usize, s: &[u8]| h[off..off + s.len()].copy_from_slice(s);
    put(0, name.as_bytes());
    put(100, b"0000644\0");
    put(108, b"0000000\0");
    put(116, b"0000000\0");
    put(124, format!("{:011o}\0", body.len()).as_bytes());
    put(136, b"00000000000\0");
    put(148, b"        ");
    put(156, b"0");
    put(257, b"ustar\0");
    put(263, b"00");
    put(265, b"isim");
    put(297, b"isim");
    let sum: u32 = h.iter().map(|&b| b as u32).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(body);
    let pad = (512 - body.len() % 512) % 512;
    out.extend(std::iter::repeat_n(0u8, pad));
    Ok(())
}

/// The `.cubex` archive of `a` (aggregated from `p`) as bytes; `workload` names the process.
pub fn cubex(
    p: &Profile,
    a: &Aggregated,
    workload: &str,
    compression: Compression,
) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    tar_member(&mut out, "anchor.xml", anchor(p, a, workload).as_bytes())?;
    let (_, order) = cnode_order(p);
    for m in 0..=THREADS_METRIC {
        let (index, data) = metric_files(a, m, &order);
        let data = match compression {
            Compression::Zlib => compress(&data),
            Compression::None => data,
        };
        tar_member(&mut out, &format!("{m}.index"), &index)?;
        tar_member(&mut out, &format!("{m}.data"), &data)?;
    }
    out.extend(std::iter::repeat_n(0u8, 1024));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ustar_headers_carry_a_valid_checksum_and_padding() {
        let mut out = Vec::new();
        tar_member(&mut out, "a.data", b"hello").unwrap();
        assert_eq!(out.len(), 1024);
        let h = &out[..512];
        let stored = u32::from_str_radix(
            std::str::from_utf8(&h[148..154]).unwrap().trim_matches(' '),
            8,
        )
        .unwrap();
        let mut copy = h.to_vec();
        copy[148..156].copy_from_slice(b"        ");
        assert_eq!(stored, copy.iter().map(|&b| b as u32).sum::<u32>());
        assert_eq!(&h[124..136], b"00000000005\0");
        assert_eq!(&out[512..517], b"hello");
        assert!(out[517..].iter().all(|&b| b == 0));
    }

    /// A compressed member holds the same values: its chunk table adds up and each chunk
    /// inflates to its slice of them.
    #[test]
    fn compressed_data_inflates_to_the_values() {
        use std::io::Read as _;
        let mut raw = b"CUBEX.DATA".to_vec();
        for i in 0..(CHUNK / 8 + 100) as u64 {
            raw.extend_from_slice(&(i % 7).to_le_bytes());
        }
        let z = compress(&raw);
        assert_eq!(&z[..11], b"ZCUBEX.DATA");
        let n = i64::from_le_bytes(z[11..19].try_into().unwrap()) as usize;
        assert_eq!(n, 2, "a chunk of CHUNK bytes and a rest");
        let mut back = Vec::new();
        for c in 0..n {
            let e = |k: usize| {
                let o = 19 + 24 * c + 8 * k;
                i64::from_le_bytes(z[o..o + 8].try_into().unwrap()) as usize
            };
            assert_eq!(e(0), c * CHUNK);
            let mut d = flate2::read::ZlibDecoder::new(&z[e(1)..e(1) + e(2)]);
            d.read_to_end(&mut back).unwrap();
        }
        assert_eq!(back, &raw[10..]);
        assert!(z.len() * 10 < raw.len(), "repetitive values compress");
    }

    #[test]
    fn xml_names_are_escaped() {
        assert_eq!(esc("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
    }
}
