"""The transaction coordinator (KIP-98 as shipped): transactional ids, epochs, markers."""
