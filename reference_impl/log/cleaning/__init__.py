"""Log compaction: planning (:mod:`.plan`), record rules (:mod:`.rules`), the file work (:mod:`.executor`)
and crash recovery at open (:mod:`.recovery`). Planning and rules are sans-IO."""
