/// What the index structures fail with: the text index's storage, or an
/// embedding model that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("full-text index failed: {0}")]
    Index(#[from] tantivy::TantivyError),
    #[error("embedding model is unusable: {0}")]
    Model(String),
    #[error("approximate vector index failed: {0}")]
    Ann(String),
}
