//! Sections: a chunk's bytes (and the head's) are a run of them, each a
//! little-endian u64 length and an rkyv archive of bounded size.

use rkyv::rancor;
use rkyv::util::AlignedVec;

use crate::error::ProjectionError;

/// The largest archive rkyv's 32-bit relative pointers can address.
const RKYV_ARCHIVE_LIMIT: usize = i32::MAX as usize;
/// Appends bytes behind their little-endian u64 length.
pub(super) fn append_bytes(body: &mut Vec<u8>, bytes: &[u8]) {
    body.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    body.extend_from_slice(bytes);
}

/// Appends one section: its archive's length, then the archive. Refuses an
/// archive rkyv could not read back rather than write an unusable snapshot.
pub(super) fn append_section<T>(body: &mut Vec<u8>, what: &str, value: &T) -> Result<(), ProjectionError>
where
    T: for<'a> rkyv::Serialize<
            rkyv::api::high::HighSerializer<AlignedVec, rkyv::ser::allocator::ArenaHandle<'a>, rancor::Error>,
        >,
{
    let archive = rkyv::to_bytes::<rancor::Error>(value)
        .map_err(|error| ProjectionError::CorruptSnapshot(format!("cannot encode the {what}: {error}")))?;
    if archive.len() > RKYV_ARCHIVE_LIMIT {
        return Err(ProjectionError::CorruptSnapshot(format!(
            "the snapshot's {what} section is {} bytes, past rkyv's {RKYV_ARCHIVE_LIMIT}",
            archive.len()
        )));
    }
    body.extend_from_slice(&(archive.len() as u64).to_le_bytes());
    body.extend_from_slice(&archive);
    Ok(())
}
/// Reads a body's sections one by one, aligned for rkyv.
pub(super) struct Sections<'body> {
    pub(super) rest: &'body [u8],
}

impl<'body> Sections<'body> {
    pub(super) fn next_bytes(&mut self, what: &str) -> Result<Option<&'body [u8]>, ProjectionError> {
        if self.rest.is_empty() {
            return Ok(None);
        }
        let truncated = || ProjectionError::CorruptSnapshot(format!("snapshot is cut short in a {what}"));
        let (length, rest) = self.rest.split_first_chunk::<8>().ok_or_else(truncated)?;
        let length = usize::try_from(u64::from_le_bytes(*length)).map_err(|_| truncated())?;
        if length > rest.len() {
            return Err(truncated());
        }
        let (bytes, rest) = rest.split_at(length);
        self.rest = rest;
        Ok(Some(bytes))
    }

    pub(super) fn next_archive(&mut self, what: &str) -> Result<Option<AlignedVec<16>>, ProjectionError> {
        let Some(archive) = self.next_bytes(what)? else { return Ok(None) };
        let mut aligned: AlignedVec<16> = AlignedVec::with_capacity(archive.len());
        aligned.extend_from_slice(archive);
        Ok(Some(aligned))
    }
}

pub(super) fn decode<T>(archive: &AlignedVec<16>, what: &str) -> Result<T, ProjectionError>
where
    T: rkyv::Archive,
    T::Archived: for<'a> rkyv::bytecheck::CheckBytes<rkyv::api::high::HighValidator<'a, rancor::Error>>
        + rkyv::Deserialize<T, rkyv::api::high::HighDeserializer<rancor::Error>>,
{
    rkyv::from_bytes::<T, rancor::Error>(archive)
        .map_err(|error| ProjectionError::CorruptSnapshot(format!("cannot decode the snapshot's {what}: {error}")))
}
