//! Links the harness's test binaries (the Layer 1 goldens among them) as position-dependent
//! executables on Linux. A test binary needs no address-space randomisation, and a position-
//! independent one of 24 MB makes the loader apply 40,000 relocations and copy the pages they
//! touch at every start: about 1.5 ms of a 12 ms Layer 1 test process (issue 46). Release
//! binaries (`keyless`) are not touched.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-tests=-no-pie");
    }
}
