#include "Normalizers.h"
