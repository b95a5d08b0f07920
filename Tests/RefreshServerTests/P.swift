import Testing; import AsyncHTTPClient; import HummingbirdTesting
