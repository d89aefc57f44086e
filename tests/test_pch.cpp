// The translation unit ds_test_pch builds the GoogleTest programs' shared precompiled header
// with (tests/CMakeLists.txt).
