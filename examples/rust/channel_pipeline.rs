//! channel_pipeline.rs: a producer and a consumer joined by a `std::sync::mpsc` channel, with
//! fixed work per message: the producer makes each of ITEMS messages in W0 steps, the consumer
//! spends W1 on each. Every thread's work is fixed by the arguments, so the replay must not
//! depend on how the host ran the traced program: with a slow producer (the defaults) the
//! consumer waits for about 1 - W1/W0 of its time, even in a trace where it found every
//! message already sent and never waited (the channel's receiver then neither spins nor
//! parks; only the slot's flags, set by the sender and then by the receiver, tie the two).
//!
//! usage: channel_pipeline [ITEMS [W0 W1]]   (defaults 300, 3000 1000)
use std::sync::mpsc;
use std::thread;

/// Private work: a dependent integer chain, no memory traffic.
fn work(seed: u64, n: u64) -> u64 {
    let mut x = seed;
    for _ in 0..n {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
    }
    x
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|s| {
            s.parse().unwrap_or_else(|_| {
                eprintln!("usage: channel_pipeline [ITEMS [W0 W1]]");
                std::process::exit(2)
            })
        })
        .collect();
    let arg = |i: usize, default: u64| args.get(i).copied().unwrap_or(default);
    let (items, w0, w1) = (arg(0, 300), arg(1, 3000), arg(2, 1000));
    let (tx, rx) = mpsc::channel::<u64>();
    let producer = thread::spawn(move || {
        for i in 0..items {
            tx.send(work(i, w0) & 0xffff).unwrap();
        }
    });
    let consumer = thread::spawn(move || {
        let mut sum = 0u64;
        for v in rx {
            sum = sum.wrapping_add(work(v, w1) & 0xff);
        }
        sum
    });
    producer.join().unwrap();
    println!("{}", consumer.join().unwrap());
}
