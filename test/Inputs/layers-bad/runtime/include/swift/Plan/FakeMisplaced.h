// A plan header kept in the runtime's folder.
