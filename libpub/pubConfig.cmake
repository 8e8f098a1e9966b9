# find_package(pub) gives the imported target pub::pub.
include("${CMAKE_CURRENT_LIST_DIR}/pubTargets.cmake")
