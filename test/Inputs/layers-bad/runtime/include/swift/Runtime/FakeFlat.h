// A runtime header outside every room.
