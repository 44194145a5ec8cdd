//! `CpuSet` from a CPU list as `taskset -c`, `isolcpus=` and the kernel's
//! `/sys/devices/system/cpu/*` files write it (`0-3,6`): the inverse of its
//! `Display`. A port of C code that takes its CPUs from a configuration string
//! had no way to build a set from one but to write its own parser.

use posixrt::sched::CpuSet;
use posixrt::ErrorKind;

#[test]
fn a_cpu_list_parses_to_the_set_it_names() {
    let s: CpuSet = "0-3,6".parse().unwrap();
    assert_eq!(s, CpuSet::from_cpus([0, 1, 2, 3, 6]).unwrap());
    // What the kernel files hold: a trailing newline; and spaces around entries.
    assert_eq!(
        "0-1\n".parse::<CpuSet>().unwrap(),
        CpuSet::from_cpus([0, 1]).unwrap()
    );
    assert_eq!(
        " 2 , 5-6 ".parse::<CpuSet>().unwrap(),
        CpuSet::from_cpus([2, 5, 6]).unwrap()
    );
    assert_eq!(
        "1023".parse::<CpuSet>().unwrap(),
        CpuSet::single(1023).unwrap()
    );
    // The empty list is the empty set (`/sys/devices/system/cpu/offline`).
    assert_eq!("".parse::<CpuSet>().unwrap(), CpuSet::new());
    // The round trip with Display.
    let t = CpuSet::from_cpus([0, 2, 3, 4, 9, 100, 1023]).unwrap();
    assert_eq!(t.to_string().parse::<CpuSet>().unwrap(), t);
}

#[test]
fn a_bad_cpu_list_is_invalid_input_with_a_hint_naming_the_entry() {
    for (list, names) in [
        ("0-3,x", "x"),
        ("3-1", "3-1"),
        ("0,,2", "empty"),
        ("0,", "empty"),
        ("0-1024", "1024"),
        ("4096", "4096"),
        ("-1", "-1"),
        ("0-7:2", "0-7:2"),
        ("1-", "1-"),
    ] {
        let e = list.parse::<CpuSet>().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{list:?}: {e}");
        assert!(e.to_string().contains(names), "{list:?}: {e}");
        let hint = e.hint().unwrap_or_default();
        assert!(
            hint.contains("0-3,6"),
            "{list:?}: no syntax in the hint: {e}"
        );
    }
}
