//! The storage form of an event: one format byte, then rkyv.
//!
//! Used by the embedded log and by snapshots. Decoding checks the archive
//! (rkyv's bytecheck) and then the event's own validity, so bytes that were
//! corrupted or written by something else never become an [`Event`].

use rkyv::rancor;
use rkyv::util::AlignedVec;

use crate::envelope::Event;
use crate::error::Error;

/// Bumped whenever the archived layout of [`Event`] changes.
pub const STORAGE_FORMAT: u8 = 1;

/// Encodes an event for storage.
pub fn encode(event: &Event) -> Result<Vec<u8>, Error> {
    let archived = rkyv::to_bytes::<rancor::Error>(event).map_err(|e| Error::StorageEncoding(e.to_string()))?;
    let mut bytes = Vec::with_capacity(archived.len() + 1);
    bytes.push(STORAGE_FORMAT);
    bytes.extend_from_slice(&archived);
    Ok(bytes)
}

/// Decodes an event written by [`encode`].
pub fn decode(bytes: &[u8]) -> Result<Event, Error> {
    let (format, body) = bytes.split_first().ok_or_else(|| Error::CorruptStorage("empty record".to_string()))?;
    if *format != STORAGE_FORMAT {
        return Err(Error::CorruptStorage(format!(
            "storage format {format} is not {STORAGE_FORMAT}, the one this build reads"
        )));
    }
    // rkyv needs its buffer aligned; records read from sled or the network
    // are not, so they are copied once.
    let mut aligned: AlignedVec<16> = AlignedVec::with_capacity(body.len());
    aligned.extend_from_slice(body);
    let event = rkyv::from_bytes::<Event, rancor::Error>(&aligned).map_err(|e| Error::CorruptStorage(e.to_string()))?;
    event.validate()?;
    Ok(event)
}
