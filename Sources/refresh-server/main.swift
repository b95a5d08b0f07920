import RefreshServer; print("x")
