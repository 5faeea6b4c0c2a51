"""GPUs of local ops: requests admitted and held across every CLI of the machine."""
