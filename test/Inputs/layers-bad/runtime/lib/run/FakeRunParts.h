// A private header of the run room.
