#include <criterion/criterion.h>
Test(engine, placeholder) {
    cr_assert(1);
}
