//! Tour section: `posixrt::advise`.

/// Runs this section of the tour; prints what it shows.
pub fn run() -> Result<(), Box<dyn std::error::Error>> {
    Ok(())
}
