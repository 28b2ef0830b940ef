/*
 * A stand-in libcudart.so.12 for CudaFakeDriverTest: JavaCPP's libjnicudart.so has NEEDED
 * libcudart.so.12 with the version node libcudart.so.12, and binds functions lazily, so a library
 * with that soname and version node loads it; no runtime function is called by the checkpoint code.
 */
int gpushare_fake_cudart(void) { return 0; }
