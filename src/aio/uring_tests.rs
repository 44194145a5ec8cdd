//! Tests of the ring choice and entry (`uring.rs`).

use super::*;
use std::sync::{mpsc, Arc};

/// Pushes a no-op into the ring `r` picks for the calling thread; returns
/// that ring's index. (Each test thread touches the ring in turn, so the
/// queue has one writer at a time, as under the core lock.)
fn push_nop(r: &Ring) -> u8 {
    let s = r.pick();
    let nop = opcode::Nop::new().build().user_data(INTERNAL);
    // SAFETY: one thread at a time pushes (see above); a no-op names no
    // memory.
    assert!(unsafe { s.push(&nop) }, "the queue has room");
    s.index
}

/// Two threads submitting to one context at once each keep a ring of
/// their own: a thread goes back to the ring it used last, and entering
/// its own entries leaves the other thread's ring alone (entering it
/// would wait, under the ring's lock, for that thread's inline work, to
/// find nothing to submit: seen as a tenth of a `multi_thread` tokio
/// runtime's time, in `mutex_spin_on_owner`).
#[test]
fn a_thread_keeps_its_ring_and_enters_only_its_own() {
    if !crate::sys::ringfd::tests::uring_allowed() {
        return;
    }
    let r = Arc::new(Ring::new(8, 2).expect("io_uring_setup"));
    let (pushed, go) = (mpsc::channel(), mpsc::channel::<()>());
    let other = {
        let r = Arc::clone(&r);
        let (tx, rx) = (pushed.0, go.1);
        std::thread::spawn(move || {
            // This thread creates the second ring and enters what it
            // pushed; its next entry, placed as usual, goes in the same
            // ring although the first is free, and waits there.
            r.force(Some(1));
            let first = push_nop(&r);
            r.submit_mine().expect("enter");
            r.force(None);
            let again = push_nop(&r);
            tx.send((first, again)).expect("send");
            // (Alive until the test is done: a thread's token is the
            // address of its thread-local, which a new thread may reuse.)
            let _ = rx.recv();
        })
    };
    let (first, again) = pushed.1.recv().expect("the other thread pushed");
    assert_eq!((first, again), (1, 1), "the other thread's rings");
    assert_eq!(r.rings(), 2);
    assert!(
        !r.main.busy(),
        "the other thread entered the no-op it put in the first ring"
    );
    let ring1 = r.extra[0].get().expect("the second ring");
    assert!(ring1.busy(), "the other thread's second entry waits");
    // This thread takes the free ring and enters its entry, and only that.
    assert_eq!(push_nop(&r), 0);
    r.submit_mine().expect("enter");
    assert!(!r.main.busy(), "this thread's entry is in the kernel");
    assert!(ring1.busy(), "the other thread's entry is left to it");
    // With nothing of its own waiting, an enter enters nothing.
    r.submit_mine().expect("enter");
    assert!(ring1.busy(), "the other thread's entry is left to it");
    let _ = go.0.send(());
    other.join().expect("the other thread");
    // Entered by whoever asks for every ring.
    r.submit().expect("enter");
    assert!(!ring1.busy());
}

/// The no-op a new ring leaves in the first ring (to wake a reaper asleep
/// there) is entered by the next thread that enters its own rings, even
/// when the creating thread's mask went to another context before it
/// entered: it belongs to no thread's mask.
#[test]
fn a_new_ring_s_no_op_does_not_wait_for_its_creator() {
    if !crate::sys::ringfd::tests::uring_allowed() {
        return;
    }
    let x = Arc::new(Ring::new(8, 2).expect("io_uring_setup"));
    let y = Ring::new(8, 2).expect("io_uring_setup");
    // Another thread takes the first ring of X, and its entry is taken by
    // the kernel but not counted yet (an enter under way): the ring looks
    // busy.
    let (done, go) = (mpsc::channel(), mpsc::channel::<()>());
    let other = {
        let x = Arc::clone(&x);
        let (tx, rx) = (done.0, go.1);
        std::thread::spawn(move || {
            push_nop(&x);
            assert_eq!(x.main.ring.submit().expect("enter"), 1);
            tx.send(()).expect("send");
            // (Alive until the test is done: its token stays its own.)
            let _ = rx.recv();
        })
    };
    done.1.recv().expect("the other thread pushed");
    assert!(x.main.busy());
    // This thread creates the second ring (and its no-op in the first),
    // pushes into Y (its mask goes to Y), then into X again (its ring)
    // and enters its own rings.
    push_nop(&x);
    assert_eq!(x.rings(), 2);
    push_nop(&y);
    push_nop(&x);
    x.submit_mine().expect("enter");
    assert!(
        !x.main.sq_pending(),
        "the new ring's no-op was entered into the first ring"
    );
    let _ = go.0.send(());
    other.join().expect("the other thread");
}
