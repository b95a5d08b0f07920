print("refresh-client")
