#ifndef PUB_H
#define PUB_H
#endif
